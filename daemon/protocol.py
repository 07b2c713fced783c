"""The daemon's wire format: length-prefixed msgpack frames (see docs/protocol.md).

A frame is a 4-byte big-endian unsigned length followed by that many bytes of msgpack
holding one map. Every map carries ``"v"`` (the protocol version) and ``"type"``;
requests carry an ``"id"`` the reply echoes. The same framing is used between the
supervisor and its worker subprocess.

Nothing here imports Warp.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import os
import socket
import stat
import struct
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

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
    """A frame or message that does not follow the protocol."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConnectionClosed(Exception):
    """The peer closed the connection (cleanly or in the middle of a frame)."""


def packb(obj: Any) -> bytes:
    data: bytes = _msgpack.packb(obj, use_bin_type=True, default=_default)
    return data


def unpackb(data: bytes, *, max_size: int = MAX_FRAME) -> Any:
    if len(data) > max_size:
        raise ProtocolError(E_TOO_LARGE, f"frame of {len(data)} bytes exceeds the {max_size}-byte limit")
    return _msgpack.unpackb(data, raw=False, strict_map_key=False)


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
    except Exception as exc:  # msgpack raises several unrelated classes
        raise ProtocolError(E_MALFORMED, f"frame is not valid msgpack: {type(exc).__name__}: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(E_MALFORMED, f"a message must be a map, got {type(obj).__name__}")
    if not isinstance(obj.get("type"), str):
        raise ProtocolError(E_MALFORMED, "a message needs a string field `type`")
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
                    E_TOO_LARGE, f"frame of {length} bytes exceeds the {self.max_size}-byte limit"
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
            raise ProtocolError(E_TOO_LARGE, f"frame of {length} bytes exceeds the {max_size}-byte limit")
        payload = _recv_exact(sock, length, time.monotonic() + MID_FRAME_TIMEOUT_S)
    except TimeoutError:
        raise ConnectionClosed("peer stalled in the middle of a frame") from None
    return decode_payload(payload, max_size=max_size)


# --------------------------------------------------------------------------- asyncio streams


async def read_payload(reader: asyncio.StreamReader, *, max_size: int = MAX_FRAME) -> bytes:
    """One frame's payload; ConnectionClosed at EOF, ProtocolError(E_TOO_LARGE) for a huge header."""
    try:
        header = await reader.readexactly(HEADER_SIZE)
    except asyncio.IncompleteReadError as exc:
        raise ConnectionClosed("connection closed" + (" mid-header" if exc.partial else "")) from None
    (length,) = _HEADER.unpack(header)
    if length > max_size:
        raise ProtocolError(E_TOO_LARGE, f"frame of {length} bytes exceeds the {max_size}-byte limit")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise ConnectionClosed("connection closed mid-frame") from None


async def write_message(
    writer: asyncio.StreamWriter, msg: Mapping[str, Any], *, max_size: int = MAX_FRAME
) -> None:
    writer.write(encode_frame(msg, max_size=max_size))
    await writer.drain()


# --------------------------------------------------------------------------- where the socket lives


def runtime_dir() -> Path:
    """A folder only this user can enter: $XDG_RUNTIME_DIR/warp-harness or /tmp/warp-harness-UID."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg) / "warp-harness"
    return Path(tempfile.gettempdir()) / f"warp-harness-{os.getuid()}"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700, or check an existing one is ours, a real folder, and private."""
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} exists and is not a directory (a symlink?); refusing to use it")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to this user; refusing to use it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def workspace_key(workspace: Path) -> str:
    return hashlib.sha256(str(workspace.resolve()).encode("utf-8")).hexdigest()[:16]


def socket_path_for(workspace: Path, base: Path | None = None) -> Path:
    """The daemon socket of a workspace: ``<runtime_dir>/<sha256(resolved workspace)[:16]>.sock``."""
    return (base or runtime_dir()) / f"{workspace_key(workspace)}.sock"


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
        request_id = self._next_id
        self._next_id += 1
        self.send(message(type_, id=request_id, **fields))
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
