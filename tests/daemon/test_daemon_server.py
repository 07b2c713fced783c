"""The daemon over its real Unix socket: trust, malformed frames, several clients, saves
seen by watchdog, the result cache, history."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, FAST, by_rule, write

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol as P
from warp_harness.daemon.server import Daemon, DaemonAlreadyRunning, DaemonThread

MARKER_MODULE = """
import pathlib
import warp as wp

pathlib.Path(__file__).with_name("EXECUTED").write_text("imported!")


@wp.kernel
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""


def _start(ws: Path, tmp: Path, **kw) -> DaemonThread:
    kw.setdefault("debounce_ms", 50)
    daemon = Daemon(ws, socket_path=tmp / "run" / "d.sock", log=lambda s: None, **kw)
    return DaemonThread(daemon).start()


@pytest.fixture
def untrusted(tmp_path: Path) -> Iterator[tuple[Path, DaemonThread]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    write(ws, "marked.py", MARKER_MODULE)
    t = _start(ws, tmp_path, trust=False)
    yield ws, t
    t.stop()


def test_untrusted_workspace_never_executes_code(untrusted: tuple[Path, DaemonThread]) -> None:
    ws, t = untrusted
    with P.Client(t.daemon.socket_path) as c:
        welcome = c.request("hello", client="test")
        assert welcome["type"] == "welcome" and welcome["trusted"] is False and welcome["protocol"] == 1
        reply = c.request("check", path="marked.py")
        assert reply["type"] == "result" and reply["trusted"] is False and reply["status"] == "untrusted"
        assert F.UNTRUSTED in [r["rule"] for r in reply["records"]]
        (ws / "marked.py").write_text(MARKER_MODULE + "\n# saved again\n")  # a real save event
        pushed = c.wait_push("result", timeout=10, where={"path": "marked.py"})
        assert pushed["push"] is True and pushed["trusted"] is False
    time.sleep(0.3)
    assert not (ws / "EXECUTED").exists()
    assert t.daemon.engine.supervisor is None  # no worker was ever started


def test_socket_is_private(untrusted: tuple[Path, DaemonThread]) -> None:
    _, t = untrusted
    path = t.daemon.socket_path
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_ISSOCK(os.stat(path).st_mode)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    with pytest.raises(DaemonAlreadyRunning):
        Daemon(t.daemon.workspace, socket_path=path, log=lambda s: None)._claim_socket()


def test_malformed_and_oversized_frames_get_errors(untrusted: tuple[Path, DaemonThread]) -> None:
    _, t = untrusted
    path = t.daemon.socket_path
    with P.Client(path) as c:
        c.request("subscribe", enabled=False)
        for payload in (b"\xc1\xc1", P.packb([1, 2]), P.packb({"no": "type"})):
            c.sock.sendall(struct.pack(">I", len(payload)) + payload)
            err = c.recv(timeout=5)
            assert err["type"] == "error" and err["code"] == P.E_MALFORMED
        assert c.request("ping")["type"] == "pong"  # the connection survives
        assert c.request("nonsense")["code"] == P.E_UNKNOWN_TYPE
        assert c.request("check")["code"] == P.E_BAD_REQUEST
        assert c.request("check", path="../../etc/passwd")["code"] == P.E_BAD_REQUEST
        c.send({"v": 99, "type": "ping", "id": 7})
        err = c.recv(timeout=5)
        assert err["code"] == P.E_VERSION and err["id"] == 7
    raw = socket.socket(socket.AF_UNIX)
    raw.connect(str(path))
    raw.sendall(struct.pack(">I", P.MAX_FRAME + 1) + b"x" * 100)
    err = P.recv_message(raw, timeout=5)
    assert err["code"] == P.E_TOO_LARGE and err["fatal"] is True
    assert raw.recv(10) == b""  # closed after the reply
    raw.close()
    half = socket.socket(socket.AF_UNIX)  # a client that vanishes mid-frame
    half.connect(str(path))
    half.sendall(struct.pack(">I", 100) + b"abc")
    half.close()
    with P.Client(path) as c:  # the daemon keeps running
        assert c.request("status")["errors_replied"] >= 8


def test_several_clients_get_pushes(untrusted: tuple[Path, DaemonThread]) -> None:
    _, t = untrusted
    clients = [P.Client(t.daemon.socket_path) for _ in range(3)]
    try:
        for c in clients:
            c.request("hello", client="c")
        assert clients[0].request("status")["clients"] == 3
        clients[1].request("check", path="marked.py", wait=False)
        for c in clients:
            assert c.wait_push("result", timeout=10)["path"] == "marked.py"
    finally:
        for c in clients:
            c.close()


@pytest.mark.slow
def test_trusted_save_to_result_cache_and_history(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / "boundary_bug.py", ws / "boundary_bug.py")
    write(ws, "plain.py", "print('not a kernel module')\n")
    t = _start(ws, tmp_path, trust=True, runtime_overrides=FAST.to_dict())
    try:
        with P.Client(t.daemon.socket_path, timeout=120) as c:
            assert c.request("hello", client="t")["trusted"] is True
            first = c.request("check", path="boundary_bug.py")
            assert first["cached"] is False and first["status"] == "fail"
            (rec,) = by_rule(first, F.UNWRITTEN)
            assert rec["streak"] == 1 and rec["tier"] == "dynamic"
            assert first["repros"] and (ws / first["repros"][0]).is_file()
            # an unchanged save answers from the result cache, without the worker
            t0 = time.perf_counter()
            again = c.request("check", path="boundary_bug.py")
            assert again["cached"] is True and (time.perf_counter() - t0) < 0.2
            assert by_rule(again, F.UNWRITTEN)[0]["streak"] == 2
            # a corrupt cache file is discarded and the result rebuilt
            assert t.daemon.engine.cache.flush(timeout=10)  # written after the reply
            cache_file = t.daemon.engine.cache.file_for(ws / "boundary_bug.py")
            cache_file.write_bytes(cache_file.read_bytes()[:40])
            rebuilt = c.request("check", path="boundary_bug.py")
            assert rebuilt["cached"] is False and by_rule(rebuilt, F.UNWRITTEN)
            assert c.request("status")["cache"]["discarded"] == 1
            # a real save (edit in place) is picked up by watchdog and pushed; the fix validates
            c.pushes.clear()
            text = (ws / "boundary_bug.py").read_text().replace("if i < n - 1:", "if i < n:")
            (ws / "boundary_bug.py").write_text(text)
            (ws / "plain.py").write_text("print('still not')\n")
            pushed = c.wait_push("result", timeout=60, where={"path": "boundary_bug.py"})
            assert pushed["kernels"]["shift_add"]["validate"] == {"cpu": "pass"}, [
                r["message"] for r in pushed["records"]
            ]
            assert not [r for r in pushed["records"] if r["severity"] == "error"]
            time.sleep(0.3)
            assert all(p.get("path") != "plain.py" for p in c.pushes if p["type"] == "result")
            assert c.request("results", path="boundary_bug.py")["results"][0]["status"] == "ok"
            c.request("shutdown")
        t.thread.join(30)
        assert not t.thread.is_alive() and not t.daemon.socket_path.exists()
    finally:
        t.stop()


def _paths(c: P.Client) -> dict[str, str]:
    return {r["path"]: r["status"] for r in c.request("results")["results"]}


def _settle(c: P.Client, want: set[str], timeout: float = 30.0) -> dict[str, str]:
    """``results`` once its paths are ``want`` (or at the timeout, for the assertion to show)."""
    deadline = time.monotonic() + timeout
    seen = _paths(c)
    while set(seen) != want and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = _paths(c)
    return seen


def test_a_renamed_folder_leaves_no_ghost_results(tmp_path: Path) -> None:
    """Issue #30 (the rename ghost): a top-level folder is seen by the root's watch, which is not
    recursive, so renaming it brought no event for the files in it: ``results`` kept an entry for
    each old path. The old folder's path is delivered as deleted now, and its entries removed."""
    ws = tmp_path / "ws"
    for name in ("a.py", "b.py"):
        write(ws, f"pkg/{name}", MARKER_MODULE.replace("EXECUTED", f"EXECUTED-{name}"))
    t = _start(ws, tmp_path, trust=False)
    try:
        with P.Client(t.daemon.socket_path, timeout=60) as c:
            c.request("hello", client="t", subscribe=True)
            for name in ("pkg/a.py", "pkg/b.py"):
                c.request("check", path=name)
            assert set(_paths(c)) == {"pkg/a.py", "pkg/b.py"}
            os.rename(ws / "pkg", ws / "lib")
            assert set(_settle(c, {"lib/a.py", "lib/b.py"})) == {"lib/a.py", "lib/b.py"}
            removed = {p["path"] for p in c.pushes if p["type"] == "removed"}
            assert removed == {"pkg/a.py", "pkg/b.py"}
    finally:
        t.stop()


@pytest.mark.slow
def test_a_file_renamed_while_it_is_checked_leaves_no_ghost_error(tmp_path: Path) -> None:
    """Issue #30 (the rename ghost): a module renamed while its job ran got its "deleted" event
    first, then the job's result (an ``error``: the file was gone) was kept in ``results`` for the
    old path. A result for a file no longer there is not kept (the request that asked still gets it)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    slow = "import time\n\ntime.sleep(3)  # the job is running when the file is renamed\n"
    t = _start(ws, tmp_path, trust=True, runtime_overrides=FAST.to_dict())
    try:
        with P.Client(t.daemon.socket_path, timeout=120) as c:
            c.request("hello", client="t", subscribe=True)
            (ws / "old.py").write_text(slow + (EXAMPLES / "saxpy.py").read_text())
            c.wait_push("state", where={"path": "old.py", "state": "running"}, timeout=60)
            time.sleep(0.5)
            os.rename(ws / "old.py", ws / "new.py")
            assert c.wait_push("result", where={"path": "new.py"}, timeout=120)["status"] == "ok"
            c.wait_push("state", where={"path": "old.py", "state": "done"}, timeout=60)
            assert _paths(c) == {"new.py": "ok"}
            assert not [p for p in c.pushes if p["type"] == "result" and p["path"] == "old.py"]
    finally:
        t.stop()
