"""The daemon socket's framing: length-prefixed msgpack frames (see docs/protocol.md).

A frame is a 4-byte big-endian unsigned length followed by that many bytes of msgpack
holding one map. Every map carries ``"v"`` (the protocol version) and ``"type"``;
requests carry an ``"id"`` the reply echoes. The same framing is used between the
supervisor and its worker subprocess. What the maps hold is ``wire.messages``.

Shared by the daemon and its clients (the language server, the command line); nothing here
imports Warp, the daemon or the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import socket
import struct
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "E_BAD_REQUEST",
    "E_INTERNAL",
    "E_MALFORMED",
    "E_TOO_LARGE",
    "E_UNKNOWN_TYPE",
    "E_VERSION",
    "HEADER_SIZE",
    "MAX_FRAME",
    "MID_FRAME_TIMEOUT_S",
    "PROTOCOL_VERSION",
    "SMALL_FRAME",
    "SUPPORTED_VERSIONS",
    "UNICODE_ERRORS",
    "Client",
    "ConnectionClosed",
    "FrameBudget",
    "FrameDecoder",
    "ProtocolError",
    "decode_payload",
    "encode_frame",
    "error_message",
    "message",
    "packb",
    "read_message",
    "read_payload",
    "recv_message",
    "send_message",
    "unpackb",
    "value_limit",
    "write_message",
]

# msgpack ships no type information; keep the untyped module behind one typed name
_msgpack: Any = importlib.import_module("msgpack")

PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = (1,)
MAX_FRAME = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")
HEADER_SIZE = _HEADER.size

# error codes sent in {"type": "error", "code": ...}
E_MALFORMED = "malformed"  # frame is not msgpack / not a map / no type
E_TOO_LARGE = "too_large"  # frame length above the limit; the connection is closed after the reply
E_VERSION = "unsupported_version"
E_UNKNOWN_TYPE = "unknown_type"
E_BAD_REQUEST = "bad_request"  # a field is missing or has the wrong type
E_INTERNAL = "internal"


class ProtocolError(Exception):
    """A frame or message that does not follow the protocol. ``fatal``: the stream cannot be
    resynchronised after it (a rejected header); the connection is closed after the reply."""

    def __init__(self, code: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fatal = fatal


class ConnectionClosed(Exception):
    """The peer closed the connection (cleanly or in the middle of a frame)."""


# Strings are UTF-8, except that a file name which is not valid UTF-8 (Linux allows any bytes)
# travels as its raw bytes: Python holds such a name as surrogate escapes (``os.fsdecode``), and
# packing and unpacking with "surrogateescape" gives a Python peer back exactly the name the
# file system has. Any other string is unaffected (docs/protocol.md, "Strings and file names").
UNICODE_ERRORS = "surrogateescape"

# A decoded frame may hold at most one value (a map, an array, an item of either, a map key)
# per this many bytes of its frame: an empty map is one byte on the wire but 64 bytes in
# Python, so a 16 MiB frame of empty maps took 1.2 GB and 7 s to decode. Real messages carry
# strings and numbers, far above 8 bytes per value.
BYTES_PER_VALUE = 8
MIN_VALUES = 4096


def packb(obj: Any) -> bytes:
    data: bytes = _msgpack.packb(obj, use_bin_type=True, default=_default, unicode_errors=UNICODE_ERRORS)
    return data


def value_limit(max_size: int) -> int:
    """How many values a msgpack document of ``max_size`` bytes may decode into."""
    return max(max_size // BYTES_PER_VALUE, MIN_VALUES)


def unpackb(data: bytes, *, max_size: int = MAX_FRAME, max_values: int | None = None) -> Any:
    """Decode one msgpack document of at most ``max_size`` bytes into at most ``max_values``
    values (default ``value_limit(max_size)``); ProtocolError(E_TOO_LARGE) above either.

    msgpack's own ``max_*_len`` bound one container or string; the hooks count every map and
    array as it is built (its items included), so decoding stops at the limit instead of
    building the whole document first."""
    if len(data) > max_size:
        raise ProtocolError(E_TOO_LARGE, f"frame of {len(data)} bytes exceeds the {max_size}-byte limit")
    limit = value_limit(max_size) if max_values is None else max_values
    left = limit

    def count(container: Any) -> Any:
        nonlocal left
        left -= 1 + len(container) * (2 if isinstance(container, dict) else 1)
        if left < 0:
            raise ProtocolError(
                E_TOO_LARGE,
                f"a document of {len(data)} bytes may hold at most {limit} values "
                "(maps, arrays, their keys and items); this one holds more",
            )
        return container

    longest = min(len(data), limit)
    return _msgpack.unpackb(
        data,
        raw=False,
        strict_map_key=False,
        unicode_errors=UNICODE_ERRORS,
        max_str_len=len(data),
        max_bin_len=len(data),
        max_ext_len=len(data),
        max_array_len=longest,
        max_map_len=longest,
        object_hook=count,
        list_hook=count,
    )


def _default(obj: Any) -> Any:
    """Fallback for values msgpack cannot encode: numpy scalars/arrays, paths, enums, sets."""
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    value = getattr(obj, "value", None)
    if value is not None and type(obj).__module__ != "builtins" and hasattr(type(obj), "__members__"):
        return value  # an Enum
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):  # numpy scalar or array
        return tolist()
    raise TypeError(f"cannot encode {type(obj).__name__} in a protocol message")


def encode_frame(message: Mapping[str, Any], *, max_size: int = MAX_FRAME) -> bytes:
    payload = packb(dict(message))
    if len(payload) > max_size:
        raise ProtocolError(E_TOO_LARGE, f"message of {len(payload)} bytes exceeds the {max_size}-byte limit")
    return _HEADER.pack(len(payload)) + payload


def decode_payload(payload: bytes, *, max_size: int = MAX_FRAME) -> dict[str, Any]:
    """One frame's payload as a message map; ProtocolError(E_MALFORMED) when it is not one."""
    try:
        obj = unpackb(payload, max_size=max_size)
    except ProtocolError:
        raise
    except Exception as exc:  # msgpack raises several unrelated classes
        raise ProtocolError(E_MALFORMED, f"frame is not valid msgpack: {type(exc).__name__}: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(E_MALFORMED, f"a message must be a map, got {type(obj).__name__}")
    if not isinstance(obj.get("type"), str):
        raise ProtocolError(E_MALFORMED, "a message needs a string field `type`")
    if not obj["type"].isascii():  # raw bytes pass only in values such as paths (UNICODE_ERRORS)
        raise ProtocolError(E_MALFORMED, f"`type` must be an ASCII name, got {obj['type']!a}")
    return obj


def message(type_: str, **fields: Any) -> dict[str, Any]:
    return {"v": PROTOCOL_VERSION, "type": type_, **fields}


def error_message(code: str, text: str, request_id: Any = None, **extra: Any) -> dict[str, Any]:
    return message("error", id=request_id, code=code, message=text, **extra)


class FrameDecoder:
    """Incremental decoder: feed bytes, iterate complete payloads.

    Raises ProtocolError(E_TOO_LARGE) as soon as a header announces a frame above the
    limit (before buffering it): the stream cannot be resynchronised after that.
    """

    def __init__(self, max_size: int = MAX_FRAME) -> None:
        self.max_size = max_size
        self._buf = bytearray()

    def feed(self, data: bytes) -> Iterator[bytes]:
        self._buf.extend(data)
        while len(self._buf) >= HEADER_SIZE:
            (length,) = _HEADER.unpack_from(self._buf)
            if length > self.max_size:
                raise ProtocolError(
                    E_TOO_LARGE,
                    f"frame of {length} bytes exceeds the {self.max_size}-byte limit",
                    fatal=True,
                )
            if len(self._buf) < HEADER_SIZE + length:
                return
            payload = bytes(self._buf[HEADER_SIZE : HEADER_SIZE + length])
            del self._buf[: HEADER_SIZE + length]
            yield payload

    @property
    def pending(self) -> int:
        return len(self._buf)


# --------------------------------------------------------------------------- blocking sockets


def send_message(sock: socket.socket, msg: Mapping[str, Any], *, max_size: int = MAX_FRAME) -> None:
    sock.sendall(encode_frame(msg, max_size=max_size))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    remaining = n
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out waiting for a frame")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(remaining, 1 << 20))
        except TimeoutError:
            raise TimeoutError("timed out waiting for a frame") from None
        except (ConnectionResetError, BrokenPipeError) as exc:
            raise ConnectionClosed(str(exc)) from None
        if not chunk:
            raise ConnectionClosed("connection closed" + (" mid-frame" if chunks else ""))
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


# once the first byte of a frame has arrived, the rest is read with this much patience: a sender
# writes whole frames, so a longer stall means it died mid-frame
MID_FRAME_TIMEOUT_S = 30.0


def recv_message(
    sock: socket.socket, *, timeout: float | None = None, max_size: int = MAX_FRAME
) -> dict[str, Any]:
    """Block for one message; TimeoutError after ``timeout`` seconds, ConnectionClosed at EOF.

    ``timeout`` only bounds the wait for a frame to *start*: a timeout after part of a frame was
    consumed would leave the stream in the middle of a frame (and the next read would take payload
    bytes for a length header), so a started frame is always read to its end.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    first = _recv_exact(sock, 1, deadline)
    try:
        rest = _recv_exact(sock, HEADER_SIZE - 1, time.monotonic() + MID_FRAME_TIMEOUT_S)
        (length,) = _HEADER.unpack(first + rest)
        if length > max_size:
            raise ProtocolError(
                E_TOO_LARGE, f"frame of {length} bytes exceeds the {max_size}-byte limit", fatal=True
            )
        payload = _recv_exact(sock, length, time.monotonic() + MID_FRAME_TIMEOUT_S)
    except TimeoutError:
        raise ConnectionClosed("peer stalled in the middle of a frame") from None
    return decode_payload(payload, max_size=max_size)


# --------------------------------------------------------------------------- asyncio streams


# frames up to this size are read and decoded at once on the event loop (requests are a few
# hundred bytes); larger ones take their size from a FrameBudget first and are decoded in a thread
SMALL_FRAME = 64 * 1024


class FrameBudget:
    """Bytes of large frames that all connections together may hold (read or being decoded) at
    once: N clients sending 16 MiB frames wait their turn instead of taking N times the memory.
    Frames up to SMALL_FRAME need no share, so a ``ping`` is never held up by them."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._cond: asyncio.Condition | None = None

    @contextlib.asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        size = min(size, self.limit)
        if self._cond is None:
            self._cond = asyncio.Condition()
        cond = self._cond
        async with cond:
            await cond.wait_for(lambda: self.used + size <= self.limit)
            self.used += size
        try:
            yield
        finally:
            async with cond:
                self.used -= size
                cond.notify_all()


async def _read_header(reader: asyncio.StreamReader, max_size: int) -> int:
    try:
        header = await reader.readexactly(HEADER_SIZE)
    except asyncio.IncompleteReadError as exc:
        raise ConnectionClosed("connection closed" + (" mid-header" if exc.partial else "")) from None
    length: int = _HEADER.unpack(header)[0]
    if length > max_size:
        raise ProtocolError(
            E_TOO_LARGE, f"frame of {length} bytes exceeds the {max_size}-byte limit", fatal=True
        )
    return length


async def _read_body(reader: asyncio.StreamReader, length: int, *, patience: bool = False) -> bytes:
    """``length`` bytes. ``patience``: give up (ConnectionClosed) when they take longer than
    MID_FRAME_TIMEOUT_S: a large frame holds a share of the FrameBudget while it arrives. Small
    frames go without the timer (``wait_for`` costs a task per frame)."""
    try:
        if patience:
            return await asyncio.wait_for(reader.readexactly(length), MID_FRAME_TIMEOUT_S)
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise ConnectionClosed("connection closed mid-frame") from None
    except asyncio.TimeoutError:  # the builtin TimeoutError from 3.11 on
        raise ConnectionClosed("peer stalled in the middle of a frame") from None


async def read_payload(reader: asyncio.StreamReader, *, max_size: int = MAX_FRAME) -> bytes:
    """One frame's payload; ConnectionClosed at EOF, ProtocolError(E_TOO_LARGE) for a huge header."""
    return await _read_body(reader, await _read_header(reader, max_size))


async def read_message(
    reader: asyncio.StreamReader, *, max_size: int = MAX_FRAME, budget: FrameBudget | None = None
) -> dict[str, Any]:
    """One message: ConnectionClosed at EOF or when the peer stalls mid-frame; ProtocolError
    with ``fatal`` for a header above ``max_size``, without it for a frame that was read but
    is not a valid message (the stream is still in step: reply and go on).

    A frame above SMALL_FRAME first takes its size from ``budget`` and is decoded in a thread,
    so the event loop keeps answering other clients."""
    length = await _read_header(reader, max_size)
    if length <= SMALL_FRAME or budget is None:
        payload = await _read_body(reader, length)
        if length <= SMALL_FRAME:
            return decode_payload(payload, max_size=max_size)
        return await asyncio.to_thread(decode_payload, payload, max_size=max_size)
    async with budget.hold(length):
        payload = await _read_body(reader, length, patience=True)
        return await asyncio.to_thread(decode_payload, payload, max_size=max_size)


async def write_message(
    writer: asyncio.StreamWriter, msg: Mapping[str, Any], *, max_size: int = MAX_FRAME
) -> None:
    writer.write(encode_frame(msg, max_size=max_size))
    await writer.drain()


# --------------------------------------------------------------------------- a small blocking client


class Client:
    """Blocking client for tests, the CLI and scripts. Pushed messages are queued in ``pushes``."""

    def __init__(self, path: Path | str, *, timeout: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(os.fspath(path))
        self.timeout = timeout
        self.pushes: list[dict[str, Any]] = []
        self._next_id = 1

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, msg: Mapping[str, Any]) -> None:
        send_message(self.sock, msg)

    def recv(self, timeout: float | None = None) -> dict[str, Any]:
        return recv_message(self.sock, timeout=self.timeout if timeout is None else timeout)

    def request(self, type_: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """Send a request and return its reply (an ``error`` reply is returned, not raised)."""
        return self.ask(message(type_, **fields), timeout=timeout)

    def ask(self, request: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Send ``request`` (a message map, e.g. a typed request's ``to_wire()``) with the next id;
        its reply, as ``request``."""
        request_id = self._next_id
        self._next_id += 1
        head = {k: request[k] for k in ("v", "type") if k in request}
        self.send({**head, "id": request_id, **{k: v for k, v in request.items() if k not in head}})
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            reply = self.recv(timeout=max(deadline - time.monotonic(), 0.001))
            if reply.get("id") == request_id and reply.get("type") != "push":
                return reply
            self.pushes.append(reply)

    def wait_push(
        self, type_: str, *, timeout: float | None = None, where: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The first pushed message of ``type_`` (whose fields match ``where``), queued or new."""

        def matches(m: dict[str, Any]) -> bool:
            return m.get("type") == type_ and all(m.get(k) == v for k, v in (where or {}).items())

        for i, m in enumerate(self.pushes):
            if matches(m):
                return self.pushes.pop(i)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            m = self.recv(timeout=max(deadline - time.monotonic(), 0.001))
            if matches(m):
                return m
            self.pushes.append(m)
