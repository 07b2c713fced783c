from __future__ import annotations

import asyncio
import os
import socket
import stat
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warp_harness.daemon import protocol as P

json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), json_like, max_size=6))
def test_frames_round_trip_any_map(body: dict) -> None:
    msg = {**body, "type": "x", "v": 1}
    frame = P.encode_frame(msg)
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert P.decode_payload(frame[4:]) == msg


def test_decoder_handles_partial_and_coalesced_frames() -> None:
    frames = P.encode_frame(P.message("a", n=1)) + P.encode_frame(P.message("b", n=2))
    dec = P.FrameDecoder()
    out = []
    for i in range(len(frames)):  # one byte at a time
        out += [P.decode_payload(p) for p in dec.feed(frames[i : i + 1])]
    assert [m["type"] for m in out] == ["a", "b"]
    assert dec.pending == 0


def test_oversized_header_is_rejected_before_buffering() -> None:
    dec = P.FrameDecoder(max_size=100)
    with pytest.raises(P.ProtocolError) as err:
        list(dec.feed(struct.pack(">I", 101)))
    assert err.value.code == P.E_TOO_LARGE
    with pytest.raises(P.ProtocolError):
        P.encode_frame({"type": "x", "blob": b"x" * 200}, max_size=100)


@pytest.mark.parametrize("payload", [b"\xc1", b"\x93\x01\x02\x03", b"\x81\xa1a\x01", b"\xda\x00"])
def test_malformed_payloads(payload: bytes) -> None:
    with pytest.raises(P.ProtocolError) as err:
        P.decode_payload(payload)
    assert err.value.code == P.E_MALFORMED


def test_numpy_and_paths_encode() -> None:
    import numpy as np

    msg = P.decode_payload(P.encode_frame({"type": "t", "a": np.float32(1.5), "p": Path("/x"), "s": {1}})[4:])
    assert msg == {"type": "t", "a": 1.5, "p": "/x", "s": [1]}


def test_blocking_socket_helpers() -> None:
    a, b = socket.socketpair()
    with a, b:
        P.send_message(a, P.message("ping", id=3))
        assert P.recv_message(b, timeout=1)["id"] == 3
        with pytest.raises(TimeoutError):
            P.recv_message(b, timeout=0.05)
        a.sendall(struct.pack(">I", 10) + b"abc")
        a.close()
        with pytest.raises(P.ConnectionClosed):
            P.recv_message(b, timeout=1)


def test_async_read_payload_limits() -> None:
    async def go() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(struct.pack(">I", 50))
        with pytest.raises(P.ProtocolError):
            await P.read_payload(reader, max_size=10)
        reader = asyncio.StreamReader()
        reader.feed_data(struct.pack(">I", 5) + b"ab")
        reader.feed_eof()
        with pytest.raises(P.ConnectionClosed):
            await P.read_payload(reader)

    asyncio.run(go())


def test_private_dir_is_0700_and_refuses_symlinks(tmp_path: Path) -> None:
    d = P.ensure_private_dir(tmp_path / "run" / "wh")
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    os.chmod(d, 0o755)
    P.ensure_private_dir(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    (tmp_path / "link").symlink_to(d)
    with pytest.raises(PermissionError):
        P.ensure_private_dir(tmp_path / "link")


def test_socket_path_is_stable_and_short(tmp_path: Path) -> None:
    a = P.socket_path_for(tmp_path)
    assert a == P.socket_path_for(tmp_path / ".")
    assert a != P.socket_path_for(tmp_path / "other")
    assert len(str(a)) < 100  # AF_UNIX paths are limited to 108 bytes
