"""Saving a helper module re-checks the kernel modules that import it (real watchdog events,
real Warp compiles in the worker, the real socket)."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import FAST, by_rule, write

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol as P
from warp_harness.daemon.server import Daemon, DaemonThread

pytestmark = pytest.mark.slow

KERNEL_MODULE = """
import numpy as np
import warp as wp
from consts import OFFSET
from helpers import scale

from warp_harness.contract import Contract


@wp.kernel
def affine(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = scale(x[i]) + float(OFFSET)


contract = Contract(
    kernel=affine,
    reference=lambda x: {"out": 3.0 * x + 1.0},
    inputs=lambda n, rng: {"x": rng.standard_normal(n).astype(np.float32), "out": np.empty(n, np.float32)},
    outputs=["out"],
    sizes=[1, 64],
)
"""

HELPERS = """
import warp as wp


@wp.func
def scale(v: float):
    return v * {factor}
"""


def _result_for(c: P.Client, path: str) -> dict:
    return c.wait_push("result", timeout=120, where={"path": path})


def test_saving_a_helper_rechecks_the_kernel_module_that_imports_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws, "consts.py", "OFFSET = 1.0\n")  # plain Python: no kernel, no contract
    write(ws, "helpers.py", HELPERS.format(factor="2.0"))  # a @wp.func module
    write(ws, "kern.py", KERNEL_MODULE)
    daemon = Daemon(
        ws,
        trust=True,
        runtime_overrides=FAST.merged({"bench": False}).to_dict(),
        socket_path=tmp_path / "run" / "d.sock",
        debounce_ms=50,
        log=lambda s: None,
    )
    with DaemonThread(daemon) as t, P.Client(t.daemon.socket_path, timeout=120) as c:
        c.request("hello", client="t")
        first = c.request("check", path="kern.py")  # helper multiplies by 2: 2x + 1 != 3x + 1
        assert first["kernels"]["affine"]["validate"] == {"cpu": "fail"}, first["records"]
        assert by_rule(first, F.MISMATCH)

        # the @wp.func helper is fixed and saved: the kernel module is re-checked and passes
        c.pushes.clear()
        write(ws, "helpers.py", HELPERS.format(factor="3.0"))
        fixed = _result_for(c, "kern.py")
        assert fixed["cached"] is False
        assert fixed["kernels"]["affine"]["validate"] == {"cpu": "pass"}, fixed["records"]
        assert fixed["kernels"]["affine"]["compile"] == {"cpu": "compiled"}  # new helper code

        # a plain Python module it imports changes: re-checked, fails again
        c.pushes.clear()
        write(ws, "consts.py", "OFFSET = 5.0\n")
        broken = _result_for(c, "kern.py")
        assert broken["kernels"]["affine"]["validate"] == {"cpu": "fail"}, broken["records"]
        (mismatch,) = by_rule(broken, F.MISMATCH)
        assert mismatch["actual"] - mismatch["expected"] == pytest.approx(4.0, abs=1e-3)

        # back to the passing constants: re-checked, and Warp's build is found in the kernel
        # cache (the key depends on the sources only, not on the edits made in between)
        c.pushes.clear()
        write(ws, "consts.py", "OFFSET = 1.0\n")
        again = _result_for(c, "kern.py")
        assert again["kernels"]["affine"]["validate"] == {"cpu": "pass"}, again["records"]
        assert again["kernels"]["affine"]["compile"] == {"cpu": "cached"}
        assert again["module_hash"] == fixed["module_hash"]

        # the helper module itself is not a kernel module with a contract: no error of its own
        status = c.request("results")["results"]
        assert {r["path"] for r in status} >= {"kern.py"}
        assert not [r for r in status if r["status"] not in ("ok",)]


def test_a_stale_pyc_of_the_same_size_and_second_is_not_run(tmp_path: Path) -> None:
    """CPython trusts a .pyc whose header matches the source's size and mtime (whole seconds):
    `OFFSET = 5.0` -> `OFFSET = 1.0` saved within a second ran the old value (seen in CI). The
    worker compiles workspace modules from their source."""
    import importlib.util
    import os
    import py_compile

    from warp_harness.daemon.supervisor import Supervisor

    ws = tmp_path / "ws"
    consts = write(ws, "consts.py", "OFFSET = 5.0\n")
    py_compile.compile(str(consts), cfile=importlib.util.cache_from_source(str(consts)), doraise=True)
    before = consts.stat()
    consts.write_text("OFFSET = 1.0\n")
    os.utime(consts, ns=(before.st_atime_ns, before.st_mtime_ns))  # the stale .pyc now looks valid
    write(ws, "helpers.py", HELPERS.format(factor="3.0"))
    kern = write(ws, "kern.py", KERNEL_MODULE)
    sup = Supervisor(ws, FAST.merged({"bench": False}), warmup=False)
    sup.start()
    try:
        result = sup.check(kern).to_dict()
    finally:
        sup.close()
    assert result["kernels"]["affine"]["validate"] == {"cpu": "pass"}, result["records"]
