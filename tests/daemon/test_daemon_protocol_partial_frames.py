"""A frame split across a receive timeout must not desynchronise the stream."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from warp_harness.daemon import protocol


def test_timeout_between_the_halves_of_a_frame_keeps_the_stream_in_sync() -> None:
    left, right = socket.socketpair()
    frame = protocol.encode_frame({"v": 1, "type": "progress", "blob": b"x" * 100_000})
    second = protocol.encode_frame({"v": 1, "type": "done"})

    def send_slowly() -> None:
        left.sendall(frame[:3])  # part of the header
        time.sleep(0.3)  # longer than the reader's timeout below
        left.sendall(frame[3:50_000])
        time.sleep(0.3)
        left.sendall(frame[50_000:] + second)

    sender = threading.Thread(target=send_slowly)
    sender.start()
    try:
        first = protocol.recv_message(right, timeout=0.1)
        assert first["type"] == "progress" and len(first["blob"]) == 100_000
        assert protocol.recv_message(right, timeout=2)["type"] == "done"
        with pytest.raises(TimeoutError):
            protocol.recv_message(right, timeout=0.05)
    finally:
        sender.join()
        left.close()
        right.close()
