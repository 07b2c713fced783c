"""``kill -9`` of a real trusted ``warp-harness daemon`` process while it writes results, and of the
store's own write path mid-write: what was stored stays readable, a new daemon takes over and answers
from it, and a worker left spinning in a kernel notices its daemon is gone. (Split from
test_daemon_faults.py: its daemons are their own, and a file of 285 s kept one pytest-xdist worker busy
while the other had run out of files.)
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from pathlib import Path

import pytest
from reliability_helpers import (
    Procs,
    alive,
    fault_workspace,
    files_under,
    kill_mid_write,
    readable_map,
    spawn_daemon,
    wait_for,
    wait_ready,
)

from warp_harness.daemon import protocol as P
from warp_harness.daemon import repros

pytestmark = pytest.mark.slow


def _workspace(root: Path) -> Path:
    return fault_workspace(root)


def _store_files(ws: Path) -> list[Path]:
    state = ws / ".warp-harness"
    return [
        p for p in files_under(state / "results") + files_under(state / "repros") if p.suffix == ".msgpack"
    ] + [p for p in [state / "history.msgpack"] if p.exists()]


def _assert_store_intact(ws: Path, before: dict[Path, bool]) -> None:
    """Every file of the store that was readable before the kill still is."""
    assert before and all(before.values())
    for path in before:
        assert path.exists() and readable_map(path), path
    cases, corrupt = repros.load_all(ws)
    assert corrupt == [] and cases


def test_kill_9_of_the_daemon_while_it_writes_results(tmp_path: Path, procs: Procs) -> None:
    ws = _workspace(tmp_path)
    sock = tmp_path / "run" / "d.sock"
    names = ["saxpy.py", "boundary_bug.py"]  # a pass, and a failure with a repro to store
    proc = spawn_daemon(ws, sock, "--no-watch")
    procs.append(proc)
    wait_ready(proc, sock)
    with P.Client(sock, timeout=120) as c:  # results to lose
        for name in names:
            c.request("check", path=name)
    stop = threading.Event()
    done: list[str] = []

    def hammer() -> None:  # results, history and repros written back to back
        try:
            with P.Client(sock, timeout=60) as c:
                while not stop.is_set():
                    for name in names:
                        c.request("check", path=name, force=True)
                        done.append(name)
        except (OSError, P.ConnectionClosed):
            pass

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        wait_for(lambda: len(done) >= 3, 60, "writes under way")
        time.sleep(random.Random(3).uniform(0.0, 0.2))
        before = {p: readable_map(p) for p in _store_files(ws)}
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        stop.set()
        thread.join(30)
    proc.communicate(timeout=10)
    _assert_store_intact(ws, before)

    # a new daemon takes over the stale socket and answers from what was stored
    proc = spawn_daemon(ws, sock, "--no-watch")
    procs.append(proc)
    wait_ready(proc, sock)
    with P.Client(sock, timeout=120) as c:
        for name in names:
            assert c.request("check", path=name)["cached"] is True, name
        # kill -9 again while the worker spins in a kernel that never ends: nobody is left to
        # kill that worker, it must notice its daemon is gone by itself
        c.request("hello", client="kill9")
        c.request("check", path="hang.py", force=True, wait=False)
        c.wait_push("progress", where={"stage": "validate", "kernel": "spin"})
        worker = c.request("status")["worker"]["worker_pid"]
        before = {p: readable_map(p) for p in _store_files(ws)}
        os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert isinstance(worker, int)
    try:
        wait_for(lambda: not alive(worker), 10, "the orphaned worker to exit")
    finally:
        if alive(worker):  # do not leave it spinning when the check fails
            os.kill(worker, signal.SIGKILL)
    _assert_store_intact(ws, before)


def test_kill_9_in_the_middle_of_a_result_write(tmp_path: Path) -> None:
    """The store's own write path, killed while it writes a 64 MiB result: the kill lands inside
    the write (its temporary file is left), the previous version is intact, and the temporary
    file is cleaned up later."""
    counts = kill_mid_write(tmp_path, rounds=3, mb=64)
    assert counts["mid_write"] >= 1, counts  # at least one kill caught a write in flight
    assert counts["readable"] == counts["not_older"] == 3, counts
    assert counts["temp_removed"] == counts["mid_write"]
