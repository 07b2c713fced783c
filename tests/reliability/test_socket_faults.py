"""The daemon's socket under hostile clients: a real ``warp-harness daemon`` process, raw frames.

Malformed, truncated, oversized and wrong-version frames, random byte streams on many
connections, a client that floods requests and never reads its replies, and other users
(a forked child that drops to ``nobody``) trying to connect. After each the daemon must
still answer everyone else. Figures are in docs/reliability.md.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import socket
import stat
import struct
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import write
from reliability_helpers import NOBODY, Procs, alive, connect_as, ping, rss_mb, spawn_daemon, wait_ready

from warp_harness.daemon import protocol as P

KERNEL = """
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""


class Served:
    def __init__(self, ws: Path, sock: Path, proc: object) -> None:
        self.ws = ws
        self.sock = sock
        self.proc = proc

    @property
    def pid(self) -> int:
        return self.proc.pid  # type: ignore[attr-defined, no-any-return]

    def healthy(self) -> None:
        """The daemon process is alive and a fresh client gets answers."""
        assert alive(self.pid)
        with P.Client(self.sock, timeout=10) as c:
            assert c.request("ping")["type"] == "pong"
            assert c.request("check", path="k.py")["type"] == "result"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("socket")
    ws = root / "ws"
    ws.mkdir()
    write(ws, "k.py", KERNEL)
    sock = root / "run" / "d.sock"
    started = Procs()
    proc = spawn_daemon(ws, sock, "--no-watch", trust=False)
    started.append(proc)
    try:
        wait_ready(proc, sock)
        yield Served(ws, sock, proc)
    finally:
        started.kill_all()


def _raw(sock: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(sock))
    return s


def _frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def test_random_and_structured_malformed_payloads_get_errors_and_the_connection_survives(
    served: Served,
) -> None:
    rng = random.Random(7)
    crafted = [
        b"",  # empty payload
        b"\xc1",  # a byte msgpack never uses
        b"\x91" * 100_000 + b"\xc0",  # 100,000 nested arrays
        b"\xdd\xff\xff\xff\xff",  # an array announcing 4 billion items
        b"\xdf\xff\xff\xff\xff",  # a map announcing 4 billion pairs
        b"\xdb\xff\xff\xff\xff",  # a string announcing 4 GiB
        P.packb({"type": b"ping"}),  # type as bytes
        P.packb({"type": 5}),
        P.packb({1: "ping"}),  # no string keys
        b"\x81\xa4type\xa2\xff\xfe",  # invalid UTF-8 in the type
        b"\x81\xa4type\xc7\x01\x05x",  # an ext type as the type
        P.packb({"type": "ping"}) + b"\x00",  # a valid map plus trailing bytes
        P.packb([1, 2, 3]),
        P.packb("ping"),
    ]
    randoms = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(300)]
    with P.Client(served.sock, timeout=10) as c:
        c.request("subscribe", enabled=False)
        codes: dict[str, int] = {}
        for payload in crafted + randoms:
            c.sock.sendall(_frame(payload))
            reply = c.recv(timeout=10)
            assert reply["type"] == "error", (payload[:40], reply)
            codes[reply["code"]] = codes.get(reply["code"], 0) + 1
        assert set(codes) == {P.E_MALFORMED}, codes
        assert sum(codes.values()) == len(crafted) + len(randoms)
        assert c.request("ping")["type"] == "pong"  # the same connection still works
    served.healthy()


@pytest.mark.parametrize("version", [0, 2, -1, 2**40, "1", None, 1.0, True, [1], {"v": 1}])
def test_wrong_versions_are_refused_with_the_supported_list(served: Served, version: object) -> None:
    with P.Client(served.sock, timeout=10) as c:
        c.send({"v": version, "type": "ping", "id": 11})
        err = c.recv(timeout=10)
        assert err["type"] == "error" and err["code"] == P.E_VERSION and err["id"] == 11
        assert "[1]" in err["message"]
        assert c.request("ping")["type"] == "pong"  # stays open


def test_truncated_frames_cost_only_their_own_connection(served: Served) -> None:
    full = P.encode_frame(P.message("ping", id=1))
    for cut in range(1, len(full)):  # every possible truncation, then the client goes away
        s = _raw(served.sock)
        s.sendall(full[:cut])
        s.close()
    # a client that stalls in the middle of a frame and stays connected
    stalled = _raw(served.sock)
    stalled.sendall(struct.pack(">I", 1000) + b"\x81")
    try:
        latency = max(ping(served.sock) for _ in range(5))
        assert latency < 5.0
        served.healthy()
    finally:
        stalled.close()


def test_oversized_headers_are_refused_and_the_connection_closed(served: Served) -> None:
    for length in (P.MAX_FRAME + 1, 2**31, 2**32 - 1):
        s = _raw(served.sock)
        s.sendall(struct.pack(">I", length) + b"x" * 64)
        err = P.recv_message(s, timeout=10)
        assert err["code"] == P.E_TOO_LARGE and err["fatal"] is True
        assert s.recv(16) == b""  # closed after the reply: the stream cannot be resynchronised
        s.close()
    # exactly at the limit is read (and is junk): a normal malformed reply, the connection stays
    with P.Client(served.sock, timeout=30) as c:
        c.request("subscribe", enabled=False)
        c.sock.sendall(struct.pack(">I", P.MAX_FRAME) + b"\xc1" * P.MAX_FRAME)
        assert c.recv(timeout=30)["code"] == P.E_MALFORMED
        assert c.request("ping")["type"] == "pong"
    served.healthy()


def test_random_byte_streams_on_many_connections(served: Served) -> None:
    rng = random.Random(11)
    for _ in range(200):
        s = _raw(served.sock)
        try:
            s.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 2000))))
        except OSError:  # the daemon may close first (an oversized header)
            pass
        s.close()
    served.healthy()
    with P.Client(served.sock, timeout=10) as c:
        # every one of those connections is gone again (only this one is left)
        deadline = time.monotonic() + 10
        while c.request("status")["clients"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.request("status")["clients"] == 1


def test_a_client_that_never_reads_is_dropped_and_others_are_served(served: Served) -> None:
    before_mb = rss_mb(served.pid)
    hog = _raw(served.sock)
    hog.settimeout(60)
    flood = P.encode_frame(P.message("ping", id=1)) * 1000
    sent = {"frames": 0, "error": ""}

    def send_without_reading() -> None:
        try:
            for _ in range(200):  # 200,000 requests, no reply ever read
                hog.sendall(flood)
                sent["frames"] += 1000
        except OSError as exc:  # the daemon dropped us
            sent["error"] = type(exc).__name__

    sender = threading.Thread(target=send_without_reading)
    sender.start()
    try:
        latencies = []
        while sender.is_alive() and len(latencies) < 200:
            latencies.append(ping(served.sock))
        sender.join(60)
        assert not sender.is_alive()
    finally:
        hog.close()
    assert sent["error"] in ("BrokenPipeError", "ConnectionResetError"), sent
    assert max(latencies) < 5.0, max(latencies)
    with P.Client(served.sock, timeout=10) as c:
        assert c.request("status")["clients_dropped"] >= 1
    assert rss_mb(served.pid) - before_mb < 200
    served.healthy()


@pytest.fixture
def open_base() -> Iterator[Path]:
    """A folder other users may traverse (pytest's own temp root is private to this user):
    only the daemon's socket folder and socket then stand between them and the daemon."""
    base = Path(tempfile.mkdtemp(prefix="wh-perm-", dir="/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to become another user")
def test_other_users_cannot_connect(open_base: Path, procs: Procs) -> None:
    ws = open_base / "ws"
    ws.mkdir()
    write(ws, "k.py", KERNEL)
    sock = open_base / "run" / "d.sock"
    proc = spawn_daemon(ws, sock, "--no-watch", trust=False)
    procs.append(proc)
    wait_ready(proc, sock)
    folder = sock.parent
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700 and os.lstat(folder).st_uid == os.getuid()
    assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600 and stat.S_ISSOCK(os.lstat(sock).st_mode)
    assert connect_as(NOBODY, NOBODY, sock) == errno.EACCES  # the folder stops them
    os.chmod(folder, 0o755)
    try:
        assert connect_as(NOBODY, NOBODY, sock) == errno.EACCES  # and so does the socket's mode
        os.chmod(sock, 0o666)
        assert connect_as(NOBODY, NOBODY, sock) == 0  # control: with both opened, they could
    finally:
        os.chmod(sock, 0o600)
        os.chmod(folder, 0o700)
    assert ping(sock) < 5.0


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to become another user")
def test_the_default_socket_location_is_private(tmp_path: Path, procs: Procs) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    write(ws, "k.py", KERNEL)
    sock = P.socket_path_for(ws)
    proc = spawn_daemon(ws, sock, "--no-watch", trust=False)
    procs.append(proc)
    wait_ready(proc, sock)
    assert sock.parent == P.runtime_dir()
    assert stat.S_IMODE(os.lstat(sock.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
    assert connect_as(NOBODY, NOBODY, sock) == errno.EACCES


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")
def test_a_socket_folder_of_another_user_is_refused(open_base: Path, procs: Procs) -> None:
    ws = open_base / "ws"
    ws.mkdir()
    theirs = open_base / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    proc = spawn_daemon(ws, theirs / "d.sock", "--no-watch", trust=False)
    procs.append(proc)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "belongs to uid 65534" in err, err
    assert list(theirs.iterdir()) == []
