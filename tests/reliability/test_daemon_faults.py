"""Faults injected into a real trusted ``warp-harness daemon`` process compiling and running
kernels with Warp on the CPU: the worker killed mid-job, kernels that segfault, hang or
allocate without bound, 1,000 saves in one second, the state folder deleted or made
read-only while it runs (``kill -9`` of the daemon itself while it writes results:
test_daemon_kill9.py, a file of its own so that the two run on two pytest-xdist workers). After each
the daemon must keep serving (``Served.healthy``: a fresh client gets a passing saxpy). The measured
figures are in docs/reliability.md (benchmarks/stress_daemon.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES, by_rule, rules_of, write
from reliability_helpers import (
    Procs,
    alive,
    fault_workspace,
    set_immutable,
    spawn_daemon,
    wait_for,
    wait_ready,
)

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol as P

pytestmark = pytest.mark.slow

HOG = """
import numpy as np
import warp as wp
from warp_harness.contract import Contract


@wp.kernel
def fill(out: wp.array(dtype=float)):
    out[wp.tid()] = 1.0


@wp.kernel
def copy(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    out[wp.tid()] = x[wp.tid()]


def hungry_inputs(n, rng):
    hog = []
    while True:  # allocates without bound: 1 GiB of address space a step
        hog.append(np.empty(1 << 30, np.uint8))


fill_contract = Contract(kernel=fill, reference=lambda: {"out": np.ones(4)}, inputs=hungry_inputs,
                         outputs=["out"], sizes=[4])
copy_contract = Contract(kernel=copy, reference=lambda x: x, outputs=["out"], sizes=[8],
                         inputs=lambda n, rng: {"x": rng.random(n).astype(np.float32),
                                                "out": np.empty(n, np.float32)})
"""

HOG_AT_IMPORT = """
import numpy as np
import warp as wp

HOG = []
while True:
    HOG.append(np.empty(1 << 30, np.uint8))


@wp.kernel
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""

STORM = """
import numpy as np
import warp as wp
from warp_harness.contract import Contract
{pad}

@wp.kernel
def storm(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] + 1.0


def inputs(n, rng):
    return {{"x": rng.random(n).astype(np.float32), "y": np.empty(n, np.float32)}}


contract = Contract(kernel=storm, reference=lambda x: x + 1.0, outputs=["y"], sizes=[16], inputs=inputs)
"""


def storm_source(i: int) -> str:
    """Save number ``i``: the kernel sits ``i`` lines lower, so a result names the save it read."""
    return STORM.format(pad="# pad\n" * i)


def storm_line(i: int) -> int:
    return next(n + 1 for n, line in enumerate(storm_source(i).splitlines()) if line.startswith("def storm("))


def _workspace(root: Path) -> Path:
    ws = fault_workspace(root)
    write(ws, "hog.py", HOG)
    write(ws, "hog_at_import.py", HOG_AT_IMPORT)
    return ws


class Served:
    def __init__(self, ws: Path, sock: Path, proc: Any) -> None:
        self.ws = ws
        self.sock = sock
        self.proc = proc

    def client(self, timeout: float = 120.0) -> P.Client:
        return P.Client(self.sock, timeout=timeout)

    def healthy(self) -> dict[str, Any]:
        """The daemon process is alive and checks a good kernel for a fresh client."""
        assert self.proc.poll() is None and alive(self.proc.pid)
        with self.client() as c:
            r = c.request("check", path="saxpy.py", force=True)
            assert r["type"] == "result" and r["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, r
            status: dict[str, Any] = c.request("status")
            return status

    def worker_pid(self, c: P.Client) -> int:
        pid = wait_for(lambda: c.request("status")["worker"]["worker_pid"], 60, "a worker")
        assert isinstance(pid, int)
        return pid


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("faults")
    ws = _workspace(root)
    sock = root / "run" / "d.sock"
    started = Procs()
    proc = spawn_daemon(ws, sock, "--debounce-ms", "30")
    started.append(proc)
    try:
        wait_ready(proc, sock)
        served = Served(ws, sock, proc)
        served.healthy()  # warm: worker started, saxpy built
        yield served
    finally:
        started.kill_all()


def test_worker_killed_mid_job(served: Served) -> None:
    with served.client() as c:
        c.request("hello", client="faults")
        assert c.request("check", path="hang.py", force=True, wait=False)["type"] == "queued"
        c.wait_push("progress", where={"stage": "validate", "kernel": "spin"})
        pid = served.worker_pid(c)  # the worker of this module (a module gets a fresh one)
        os.kill(pid, signal.SIGKILL)  # from outside, in the middle of the launch
        result = c.wait_push("result", where={"path": "hang.py"})
    (crash,) = by_rule(result, F.CRASH)
    assert "SIGKILL" in crash["message"] and crash["location"]["kernel"] == "spin"
    assert result["kernels"]["spin"]["validate"] == {"cpu": "crash"}
    status = served.healthy()
    assert status["worker"]["worker_pid"] != pid and status["worker"]["restarts"] >= 1


def test_a_kernel_that_segfaults(served: Served) -> None:
    with served.client() as c:
        r = c.request("check", path="oob_crash.py", force=True)
    (crash,) = by_rule(r, F.CRASH)
    assert "SIGSEGV" in crash["message"] and crash["location"]["kernel"] == "scatter"
    assert r["kernels"]["copy"]["validate"] == {"cpu": "pass"}  # the other kernel still ran
    served.healthy()


def test_a_kernel_that_hangs(served: Served) -> None:
    with served.client() as c:
        t0 = time.monotonic()
        r = c.request("check", path="hang.py", force=True)
        elapsed = time.monotonic() - t0
    (rec,) = by_rule(r, F.TIMEOUT)
    assert rec["location"]["kernel"] == "spin" and "2 s limit" in rec["message"]
    assert elapsed < 60
    served.healthy()


def test_allocation_without_bound(served: Served) -> None:
    with served.client() as c:
        served.worker_pid(c)
        restarts = c.request("status")["worker"]["restarts"]  # a new module's fresh worker is no restart
        r = c.request("check", path="hog.py", force=True)
        (rec,) = by_rule(r, F.MEMORY)
        assert rec["location"]["kernel"] == "fill" and "2048 MB" in rec["message"]
        assert r["kernels"]["fill"]["validate"] == {"cpu": "memory"}
        assert r["kernels"]["copy"]["validate"] == {"cpu": "pass"}  # same module, same worker
        assert c.request("status")["worker"]["restarts"] == restarts  # a MemoryError, caught: no restart
        r = c.request("check", path="hog_at_import.py", force=True)
        assert F.MEMORY in rules_of(r), r["records"]
    served.healthy()


def test_a_thousand_saves_in_one_second(served: Served) -> None:
    path = served.ws / "storm.py"
    path.write_text(storm_source(0))
    with served.client() as c:
        c.request("hello", client="storm")
        first = c.request("check", path="storm.py")  # built once: later saves only move it down
        assert first["kernels"]["storm"]["validate"] == {"cpu": "pass"}, first["records"]
        jobs_before = c.request("status")["jobs_done"]
        c.pushes.clear()
        t0 = time.perf_counter()
        for i in range(1, 1001):
            path.write_text(storm_source(i))  # in place, the way most editors save
            ahead = t0 + i / 1000 - time.perf_counter()
            if ahead > 0:
                time.sleep(ahead)
        storm_s = time.perf_counter() - t0

        def line_of(result: dict[str, Any]) -> int | None:
            """The kernel's line in the text a job read (None: it read a save half-written)."""
            line = (result.get("kernels") or {}).get("storm", {}).get("line")
            return line if isinstance(line, int) else None

        def settled() -> bool:
            s = c.request("status")
            return not s["queued"] and any(
                p.get("type") == "result" and p.get("path") == "storm.py" and line_of(p) == storm_line(1000)
                for p in c.pushes
            )

        wait_for(settled, 120, "the result of the last save", interval=0.2)
        time.sleep(0.5)  # nothing more comes after it
        c.request("ping")
        results = [p for p in c.pushes if p.get("type") == "result" and p.get("path") == "storm.py"]
        jobs = c.request("status")["jobs_done"] - jobs_before
        final = c.request("results", path="storm.py")["results"][0]
    assert storm_s < 5.0  # the writer kept (roughly) to its second, even on a busy machine
    lines = [line_of(r) for r in results]
    read = [x for x in lines if x is not None]
    assert read == sorted(read) and lines[-1] == storm_line(1000), lines
    assert final["kernels"]["storm"]["line"] == storm_line(1000)
    assert final["kernels"]["storm"]["validate"] == {"cpu": "pass"}
    assert 1 <= jobs <= 1000 and jobs - 1 <= len(results) <= jobs + 1
    served.healthy()


def remove_tree(folder: Path) -> None:
    """``rm -rf`` that wins against a daemon still writing into the folder."""
    wait_for(
        lambda: shutil.rmtree(folder, ignore_errors=True) or not folder.exists(), 10, f"{folder} removed"
    )


def test_state_folder_deleted_while_running(served: Served) -> None:
    state = served.ws / ".warp-harness"
    remove_tree(state)
    served.healthy()  # between jobs
    # the result cache is written behind the push (docs/protocol.md, "Watching"): soon, not before the reply
    wait_for(lambda: (state / "results").is_dir(), 10, "the results folder made again")
    # and in the middle of a job that compiles new code into it
    module = served.ws / "fresh.py"
    module.write_text((EXAMPLES / "saxpy.py").read_text().replace("a * x[i] + y[i]", "y[i] + a * x[i]"))
    with served.client() as c:
        c.request("check", path="fresh.py", force=True, wait=False)
        c.wait_push("progress", where={"stage": "compile"})
        shutil.rmtree(state, ignore_errors=True)
        # LLVM may die writing into the vanished folder ("IO failure on output stream"): a crash
        # record, the worker restarted, and that verdict not cached: the next check runs again
        c.wait_push("result", where={"path": "fresh.py"})
        again = c.request("check", path="fresh.py")
        assert again["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, again["records"]
    served.healthy()


def _read_only(folder: Path, on: bool) -> bool:
    """Make every folder under ``folder`` read-only (``chattr +i`` as root, where mode bits do
    not stop anyone; ``chmod a-w`` otherwise) or writable again."""
    folders = [folder, *(p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink())]
    if os.getuid() == 0:
        return set_immutable(folders if on else reversed(folders), on)
    for f in folders:
        mode = stat.S_IMODE(os.stat(f).st_mode)
        os.chmod(f, mode & ~0o222 if on else mode | 0o200)
    return True


def test_state_folder_made_read_only_while_running(served: Served) -> None:
    state = served.ws / ".warp-harness"
    served.healthy()
    if not _read_only(state, True):
        _read_only(state, False)
        pytest.skip("no way to make a folder read-only here (chattr unsupported)")
    try:
        # written only now: the daemon checks a new file when it sees it, and a check that ran
        # before the folder turned read-only would have cached its result (a flake under load)
        probe = served.ws / "ro_probe.py"
        probe.write_text(
            (EXAMPLES / "saxpy.py").read_text().replace("a * x[i] + y[i]", "a * x[i] + y[i] * 1.0")
        )
        with pytest.raises(OSError):
            (state / "results" / "probe").write_text("x")
        with served.client() as c:
            # new kernel code: its build cannot go into the cache; it is built elsewhere and runs
            r = c.request("check", path="ro_probe.py", force=True)
            assert r["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, r["records"]
            # a failing case cannot be stored: said so, the verdict is still there
            r = c.request("check", path="boundary_bug.py", force=True)
            assert by_rule(r, F.UNWRITTEN) and r["repros"] == []
            assert any("failing case not stored" in x["message"] for x in r["records"])
            assert c.request("check", path="ro_probe.py")["cached"] is False  # nothing was cached
        served.healthy()
    finally:
        _read_only(state, False)
    with served.client() as c:  # writable again: results are stored again
        c.request("check", path="ro_probe.py")
        assert c.request("check", path="ro_probe.py")["cached"] is True
    served.healthy()


def test_a_save_while_its_job_runs_is_not_lost(served: Served) -> None:
    """The second save lands while the first one's job runs (it read the old text): one more
    job must follow, so that the last result is the last save's."""
    path = served.ws / "storm.py"
    with served.client() as c:
        c.request("hello", client="resave")
        for i in (10, 20):
            path.write_text(storm_source(i))
            c.request("check", path="storm.py")  # built and cached once
        c.pushes.clear()
        path.write_text(storm_source(30))
        c.wait_push("state", where={"path": "storm.py", "state": "running"})
        path.write_text(storm_source(31))  # during that job
        last = c.wait_push("result", timeout=60, where={"path": "storm.py"})
        while last["kernels"].get("storm", {}).get("line") != storm_line(31):
            last = c.wait_push("result", timeout=60, where={"path": "storm.py"})
        assert last["kernels"]["storm"]["validate"] == {"cpu": "pass"}
    served.healthy()
