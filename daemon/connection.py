"""One client connection to the daemon's socket: ordered sends, and a client that stops
reading is dropped instead of growing the daemon's memory."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from warp_harness.daemon import protocol
from warp_harness.wire.statuses import RecordSet

# messages waiting for one connection's socket before it is dropped: a client that stops reading
# (replies and pushes pile up) is disconnected instead of growing the daemon's memory without bound
MAX_QUEUED_SENDS = 1000


class Connection:
    def __init__(self, writer: asyncio.StreamWriter, max_frame: int) -> None:
        self.writer = writer
        self.max_frame = max_frame
        self.subscribed = True
        self.records = RecordSet.ALL  # which records its `result` messages carry (`hello.records`)
        self.lock = asyncio.Lock()
        self.client: str | None = None
        self.waiting = 0  # sends queued behind the lock (the socket is not being read)
        self.dropped = False

    def drop(self) -> None:
        """Disconnect now (the peer stopped reading): pending writes fail, the reader sees EOF."""
        if not self.dropped:
            self.dropped = True
            self.writer.transport.abort()

    def is_dropped(self) -> bool:
        return self.dropped

    async def send(self, msg: Mapping[str, Any]) -> None:
        if self.dropped:
            return
        if self.waiting >= MAX_QUEUED_SENDS:
            self.drop()
            return
        self.waiting += 1
        try:
            async with self.lock:
                if self.is_dropped():  # dropped while this send waited for the lock
                    return
                try:
                    self.writer.write(self._encode(msg))
                    await self.writer.drain()
                except (ConnectionError, RuntimeError):
                    pass
        finally:
            self.waiting -= 1

    def _encode(self, msg: Mapping[str, Any]) -> bytes:
        """``msg`` as a frame or, when it cannot be sent (too big, a value msgpack cannot
        encode), an error frame saying so: one bad message never costs the connection its
        later replies."""
        try:
            return protocol.encode_frame(msg, max_size=self.max_frame)
        except protocol.ProtocolError as exc:  # our reply is too big: say so instead
            code, text = exc.code, exc.message
        except Exception as exc:  # msgpack raises several unrelated classes
            code, text = protocol.E_INTERNAL, f"reply could not be encoded: {type(exc).__name__}: {exc}"
        request_id = msg.get("id")
        try:
            return protocol.encode_frame(protocol.error_message(code, text, request_id))
        except Exception:  # the id itself cannot be encoded
            safe = text.encode("ascii", "backslashreplace").decode("ascii")
            return protocol.encode_frame(protocol.error_message(code, safe))
