"""The language server's transports: LSP framing with limits, the protocol guard, TCP auth.

pygls' own reader (``pygls.io_.run_async``) reads a header line without a length limit and then
``readexactly(Content-Length)`` whatever the length says: one ``Content-Length: 99999999999``
header is a MemoryError that ends the server. Messages whose params do not structure are logged
and dropped without a response, and a request before ``initialize`` reaches its handler. This
module replaces that loop, for stdio and TCP alike:

- header lines are read with a length limit; a body above ``MAX_MESSAGE_BYTES`` is never
  buffered: it is discarded in chunks (see ``MessageReader.skip``) and the stream goes on;
- a request whose params are invalid is answered with -32602 (InvalidParams), unparsable JSON
  with -32700 (ParseError);
- before ``initialize``, a request is answered with -32002 (ServerNotInitialized) and a
  notification other than ``exit`` is dropped (LSP 3.17, "Server lifecycle");
- on TCP the first message must be ``initialize`` whose ``initializationOptions.authToken`` is
  the token the server wrote to a 0600 file in the user's private runtime folder; any other
  first message gets an error and the connection is closed before anything is handled.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCProtocol

log = logging.getLogger("warp_harness.server.transport")

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
HEADER_LINE_MAX = 8192
CHUNK = 64 * 1024
AUTH_KEY = "authToken"
# what an unauthenticated TCP connection may cost: its first message must come soon and be small
AUTH_TIMEOUT_S = 10.0
AUTH_MAX_BYTES = 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002

# a header line as pygls reads it; more than 19 digits cannot be a length we accept
_CONTENT_LENGTH = re.compile(rb"Content-Length: *(\d+)\r?\n", re.IGNORECASE)

ReadSome = Callable[[int], Awaitable[bytes]]


class MessageReader:
    """LSP base-protocol framing over ``read_some`` (up to n bytes; b"" at end of stream)."""

    def __init__(self, read_some: ReadSome, max_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self._read_some = read_some
        self._buf = bytearray()
        self._eof = False
        self.max_bytes = max_bytes
        self.skipped = 0  # messages discarded for their size

    async def _fill(self) -> bool:
        if self._eof:
            return False
        data = await self._read_some(CHUNK)
        if not data:
            self._eof = True
            return False
        self._buf.extend(data)
        return True

    async def readline(self, limit: int) -> bytes:
        """Up to and including the next b"\\n", at most ``limit`` bytes; b"" at end of stream."""
        while True:
            end = self._buf.find(b"\n", 0, limit)
            if end >= 0 or len(self._buf) >= limit:
                take = end + 1 if end >= 0 else limit
                line = bytes(self._buf[:take])
                del self._buf[:take]
                return line
            if not await self._fill():
                line = bytes(self._buf)
                self._buf.clear()
                return line

    async def read_exactly(self, n: int) -> bytes | None:
        while len(self._buf) < n:
            if not await self._fill():
                return None
        body = bytes(self._buf[:n])
        del self._buf[:n]
        return body

    async def next_body(self) -> bytes | None:
        """The next message's body; None at end of stream."""
        length: int | None = None
        while True:
            line = await self.readline(HEADER_LINE_MAX)
            if not line:
                return None
            match = _CONTENT_LENGTH.fullmatch(line)
            if match is not None:
                digits = match.group(1)
                length = int(digits) if len(digits) <= 19 else sys.maxsize
                continue
            if line.strip() or length is None:
                continue  # another header (Content-Type), or noise before a header
            if length <= self.max_bytes:
                return await self.read_exactly(length)
            log.error("message of %d bytes exceeds the %d-byte limit; discarding it", length, self.max_bytes)
            self.skipped += 1
            length = await self.skip(length)

    async def skip(self, length: int) -> int | None:
        """Discard ``length`` bytes without holding them, line by line (at most CHUNK at a time).

        A line that is a ``Content-Length`` header ends the skip early: a JSON body cannot hold
        one (no raw line break inside a JSON string, no bare word outside one), so the client
        gave up on the huge message (or never meant to send it) and this is the next message.
        Returns that header's length, or None when the skip ran its course.
        """
        remaining = length
        while remaining > 0:
            line = await self.readline(min(remaining, CHUNK))
            if not line:
                return None
            match = _CONTENT_LENGTH.fullmatch(line)
            if match is not None:
                digits = match.group(1)
                return int(digits) if len(digits) <= 19 else sys.maxsize
            remaining -= len(line)
        return None


class Guard:
    """Decides what happens to each parsed message before pygls sees it."""

    def __init__(self, protocol: JsonRPCProtocol) -> None:
        self.protocol = protocol
        self.initialized = False

    def reply_error(self, msg_id: Any, code: int, message: str) -> None:
        self.protocol._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        )

    def dispatch(self, body: bytes) -> None:
        try:
            data = json.loads(body)
        except (ValueError, RecursionError, MemoryError) as exc:
            log.error("unparsable message: %s", exc)
            self.reply_error(None, PARSE_ERROR, f"parse error: {type(exc).__name__}")
            return
        self.dispatch_data(data)

    def dispatch_data(self, data: Any) -> None:
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
            self.reply_error(None, INVALID_REQUEST, "a message must be a JSON-RPC 2.0 object")
            return
        method = data.get("method")
        is_request = "id" in data and isinstance(method, str)
        if not self.initialized and isinstance(method, str) and method != types.INITIALIZE:
            if is_request:
                self.reply_error(
                    data["id"], SERVER_NOT_INITIALIZED, f"{method}: the server is not initialized"
                )
                return
            elif method != types.EXIT:
                log.warning("notification %s before initialize dropped", method)
                return
        try:
            message = self.protocol.structure_message(data)
        except JsonRpcInvalidParams as exc:
            if is_request:
                self.reply_error(data["id"], INVALID_PARAMS, f"invalid params for {method}: {_reason(exc)}")
            else:
                log.error("notification %s with invalid params dropped: %s", method, _reason(exc))
            return
        except Exception as exc:
            log.error("message %r not understood: %s", method, exc)
            if is_request:
                self.reply_error(data["id"], INVALID_REQUEST, f"{method}: not a valid request")
            return
        if is_request and method == types.INITIALIZE:
            self.initialized = True
        try:
            self.protocol.handle_message(message)
        except Exception:  # pygls answers what its handlers raise; this is what it does not catch
            log.exception("handling %r failed", method)


def _reason(exc: BaseException) -> str:
    """The innermost message of a cattrs validation error (e.g. "Position.line should be in
    range [0:2147483647], but was -1.")."""
    cause: BaseException = exc.__cause__ or exc
    while True:  # an exception group (cattrs; the backport on 3.10): its first member
        members = getattr(cause, "exceptions", None)
        if not members or not isinstance(members[0], BaseException):
            break
        cause = members[0]
    return str(cause) or type(cause).__name__


async def serve_stream(reader: MessageReader, guard: Guard, stop: threading.Event) -> None:
    while not stop.is_set():
        body = await reader.next_body()
        if body is None:
            break
        guard.dispatch(body)


# --------------------------------------------------------------------------- stdio


def start_stdio(server: Any, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Serve LSP on stdin/stdout with ``MessageReader`` instead of pygls' reader."""
    source = stdin or sys.stdin.buffer
    read1 = getattr(source, "read1", source.read)
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def read_some(n: int) -> Awaitable[bytes]:
            return loop.run_in_executor(server.thread_pool, read1, n)

        await serve_stream(MessageReader(read_some), Guard(server.protocol), stop)

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the client closed the connection; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


# --------------------------------------------------------------------------- TCP


def default_token_file(port: int) -> Path:
    from warp_harness.wire.location import ensure_private_dir, runtime_dir

    return ensure_private_dir(runtime_dir()) / f"lsp-{port}.token"


def create_token_file(path: Path) -> str:
    """A fresh random token in ``path`` (mode 0600, a new file: never through a symlink)."""
    import secrets  # TCP only: stdio start-up skips it (with hmac, ~2 ms)

    token = secrets.token_urlsafe(32)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(token + "\n")
    return token


def remove_token_file(path: Path, token: str) -> None:
    """Remove the token file, unless another server has written its own there since."""
    try:
        if path.read_text(encoding="ascii").strip() == token:
            path.unlink()
    except OSError:
        pass


def authenticate(data: Any, token: str) -> str | None:
    """Why the first message of a TCP connection is refused; None when it carries the token.

    The token is removed from the message, so that it is neither logged nor taken for a setting.
    """
    import hmac

    if not isinstance(data, dict) or data.get("method") != types.INITIALIZE or "id" not in data:
        return "the first message must be `initialize`"
    params = data.get("params")
    options = params.get("initializationOptions") if isinstance(params, dict) else None
    offered = options.pop(AUTH_KEY, None) if isinstance(options, dict) else None
    if not isinstance(offered, str) or not hmac.compare_digest(offered.encode(), token.encode()):
        return f"initializationOptions.{AUTH_KEY} is missing or wrong"
    return None


def start_tcp(server: Any, host: str, port: int, token: str) -> None:
    """Serve one authenticated client on ``host:port``; pygls' rule stays: when it leaves, the
    server shuts down. Refused connections leave the server running."""
    server._stop_event = stop = threading.Event()
    busy = False

    async def connection(stream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal busy
        reader = MessageReader(stream.read, max_bytes=AUTH_MAX_BYTES)
        try:
            body = await asyncio.wait_for(reader.next_body(), AUTH_TIMEOUT_S)
        except (TimeoutError, asyncio.TimeoutError, ConnectionError):
            body = None
        try:
            data = json.loads(body) if body is not None else None
        except (ValueError, RecursionError):
            data = None
        reason = authenticate(data, token)
        if reason is None and busy:
            reason = "the server already serves a client"
        if reason is not None:
            peer = writer.get_extra_info("peername")
            log.warning("TCP client %s refused: %s", peer, reason)
            msg_id = data.get("id") if isinstance(data, dict) else None
            refusal = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": INVALID_REQUEST, "message": reason}}
            payload = json.dumps(refusal).encode()
            writer.write(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
            try:
                await writer.drain()
            except ConnectionError:
                pass
            writer.close()
            return
        busy = True
        reader.max_bytes = MAX_MESSAGE_BYTES
        server.protocol.set_writer(writer)
        guard = Guard(server.protocol)
        guard.dispatch_data(data)
        await serve_stream(reader, guard, stop)
        server.shutdown()

    async def main() -> None:
        server._server = await asyncio.start_server(connection, host, port)
        async with server._server:
            await server._server.serve_forever()

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        pass
