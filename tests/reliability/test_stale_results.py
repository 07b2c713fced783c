"""Issue 12 item 15: both tiers of one daemon result describe the same text of the file.

The race, forced deterministically: the worker is stopped (SIGSTOP) so that the job for a
save waits for it the way it waits for a worker restart; the file is saved with a syntax
error (version A), the job starts (the static tier reads A), the file is saved again,
fixed (version B), while the job waits; then the worker goes on and imports the file as it
is now. Every result the daemon sends must describe one text: WH000 (static, A) comes with
the import error of A, and a passing kernel (dynamic, B) without WH000; the hash in the
result is that text's; the last result is B's.

The second test saves A again after the worker imported B (A, B, A: the file ends as it
was when the job started, so only the worker can tell that it imported another text).
"""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import rules_of
from reliability_helpers import FAST_PYPROJECT, Procs, spawn_daemon, wait_for, wait_ready

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol as P

pytestmark = pytest.mark.slow

FIXED = """import time

import numpy as np
import warp as wp
from warp_harness.contract import Contract

SLOW_S = @SLOW@


@wp.kernel
def inc(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 1.0


def inputs(n, rng):
    return {"x": rng.random(n).astype(np.float32), "y": np.empty(n, np.float32)}


def reference(x):
    time.sleep(SLOW_S)  # keeps the job running while a test saves the file
    return x + 1.0


contract = Contract(kernel=inc, reference=reference, outputs=["y"], sizes=[16], inputs=inputs)
"""
BROKEN = FIXED.replace("def inc(x: wp.array(dtype=float), y: wp.array(dtype=float)):", "def inc(x, y)")


def text(template: str, slow: float) -> str:
    return template.replace("@SLOW@", repr(slow))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def describe(r: dict[str, Any]) -> str:
    return f"status={r.get('status')} rules={rules_of(r)} kernels={r.get('kernels')}"


def check_one_text(r: dict[str, Any], slow: float) -> str:
    """Which version a result describes; fails when its tiers describe different ones."""
    static_saw_broken = "WH000" in rules_of(r)
    dynamic_saw_broken = r.get("status") == "import-error" or F.IMPORT_ERROR in rules_of(r)
    dynamic_saw_fixed = (r.get("kernels") or {}).get("inc", {}).get("validate") == {"cpu": "pass"}
    assert static_saw_broken == dynamic_saw_broken and dynamic_saw_fixed != dynamic_saw_broken, describe(r)
    version = "broken" if static_saw_broken else "fixed"
    expected = sha(text(BROKEN if static_saw_broken else FIXED, slow))
    assert r.get("source_sha256") == expected, (version, describe(r))
    return version


class Served:
    def __init__(self, ws: Path, sock: Path) -> None:
        self.ws, self.sock = ws, sock


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("stale")
    ws = root / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(FAST_PYPROJECT)
    sock = root / "run" / "d.sock"
    started = Procs()
    started.append(spawn_daemon(ws, sock))  # watching: saves start jobs
    try:
        wait_ready(started[0], sock)
        yield Served(ws, sock)
        assert started[0].poll() is None
    finally:
        started.kill_all()


def results_until_idle(c: P.Client, name: str) -> list[dict[str, Any]]:
    """Every result pushed for ``name`` until the daemon has nothing queued."""
    results = [c.wait_push("result", where={"path": name}, timeout=120)]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            results.append(c.wait_push("result", where={"path": name}, timeout=3))
        except (TimeoutError, OSError):
            if not c.request("status")["queued"]:
                break
    return results


def wait_idle(c: P.Client, quiet_s: float = 1.0) -> None:
    """Until nothing has been queued or running for ``quiet_s`` (late file events included)."""
    deadline = time.monotonic() + 120
    idle_since = None
    while time.monotonic() < deadline:
        if c.request("status")["queued"]:
            idle_since = None
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since >= quiet_s:
            return
        time.sleep(0.1)
    raise AssertionError("the daemon did not become idle")


def first_of(c: P.Client, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The next push that is ``wanted`` or a result, whichever comes first (others are kept)."""
    deadline = time.monotonic() + 120
    while True:
        m = c.recv(timeout=max(deadline - time.monotonic(), 0.001))
        if wanted(m) or m.get("type") == "result":
            return m
        c.pushes.append(m)


def stopped_worker_job(c: P.Client, target: Path, first: str, second: str) -> int:
    """Save ``first``; once its job runs (the worker stopped, so the job waits for it) save
    ``second``; returns the worker's pid, still stopped."""
    wait_idle(c)  # no job of an earlier save may be left to run on the stopped worker
    worker = wait_for(lambda: c.request("status")["worker"]["worker_pid"], 60, "a worker")
    c.pushes.clear()
    os.kill(worker, signal.SIGSTOP)
    try:
        target.write_text(first)
        c.wait_push("state", where={"path": target.name, "state": "running"}, timeout=30)
        time.sleep(1.0)  # the static tier has read `first`; the job waits for the worker
        target.write_text(second)
        time.sleep(0.3)  # the daemon has seen the save
    except BaseException:
        os.kill(worker, signal.SIGCONT)
        raise
    return int(worker)


def test_a_save_while_the_job_waits_for_the_worker(served: Served) -> None:
    target = served.ws / "inc.py"
    target.write_text(text(FIXED, 0.0))
    with P.Client(served.sock, timeout=120) as c:
        c.request("hello", client="stale")
        assert check_one_text(c.request("check", path="inc.py"), 0.0) == "fixed"
        worker = stopped_worker_job(c, target, text(BROKEN, 0.0), text(FIXED, 0.0))
        os.kill(worker, signal.SIGCONT)
        results = results_until_idle(c, "inc.py")
    versions = [check_one_text(r, 0.0) for r in results]
    assert versions[-1] == "fixed", versions


def test_saved_back_after_the_worker_imported_the_other_text(served: Served) -> None:
    slow = 1.0
    target = served.ws / "aba.py"
    target.write_text(text(FIXED, slow))
    with P.Client(served.sock, timeout=120) as c:
        c.request("hello", client="stale-aba")
        assert check_one_text(c.request("check", path="aba.py"), slow) == "fixed"
        worker = stopped_worker_job(c, target, text(BROKEN, slow), text(FIXED, slow))
        os.kill(worker, signal.SIGCONT)
        # the worker imports the fixed text and validates it (its reference sleeps), or finds
        # that the text changed and the daemon redoes the job: save the broken text back, so
        # the file is again the text the job was made for
        early = first_of(c, lambda m: m.get("type") == "progress" and m.get("stage") == "validate")
        target.write_text(text(BROKEN, slow))
        results = ([early] if early.get("type") == "result" else []) + results_until_idle(c, "aba.py")
    versions = [check_one_text(r, slow) for r in results]
    assert versions[-1] == "broken", versions
