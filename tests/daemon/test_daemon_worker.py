"""The worker and supervisor with real Warp on the CPU: codegen, compile, validation,
benchmark, crashes, hangs and cache invalidation. One warm worker per module."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES, FAST, access_span, by_rule, def_line, rules_of, write

from warp_harness.daemon import findings as F
from warp_harness.daemon import kernel_cache
from warp_harness.daemon.supervisor import Supervisor

# where builds go, and which compile first: the workspaces' own caches, not the session's (conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.private_kernel_builds]

BROKEN = """
import numpy as np
import warp as wp
from warp_harness.contract import Contract


@wp.func
def helper(a: wp.float16, b: float):
    return a * b


@wp.kernel
def good(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


@wp.kernel
def bad(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = helper(wp.float16(1.0), x[i])


@wp.kernel
def bad2(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.sqroot(x[i])


def inputs(n, rng):
    return {"x": rng.random(n, dtype=np.float32), "y": np.empty(n, np.float32)}


contract = Contract(kernel=good, reference=lambda x: 2 * x, outputs=["y"], sizes=[3, 100], inputs=inputs)
"""


def test_warp_internal_hooks_exist() -> None:
    """The internal Warp APIs the worker relies on (pinned to the installed version)."""
    import warp as wp
    from warp._src.types import is_array, type_scalar_type

    m = wp.get_module("wh_api_probe")
    assert callable(m.resolve_options) and callable(m.get_module_hash) and callable(m.load)
    assert callable(is_array) and callable(type_scalar_type)
    import inspect

    assert {"func", "key", "module", "options"} <= set(inspect.signature(wp.Kernel.__init__).parameters)


def test_every_kernel_gets_its_own_codegen_verdict(supervisor: Supervisor, workspace: Path) -> None:
    path = write(workspace, "broken.py", BROKEN)
    r = supervisor.check(path).to_dict()
    k = r["kernels"]
    assert (k["good"]["codegen"], k["bad"]["codegen"], k["bad2"]["codegen"]) == ("ok", "error", "error")
    errors = {rec["location"]["kernel"]: rec for rec in by_rule(r, F.CODEGEN_ERROR)}
    # the chained @wp.func error is placed in the helper, the call site is related
    assert errors["bad"]["location"]["line"] == 8
    assert "Input types must be the same" in errors["bad"]["message"]
    assert errors["bad"]["related"][0]["location"]["line"] == 20
    src = path.read_text().splitlines()
    loc = errors["bad2"]["location"]
    assert loc["line"] == 26 and src[25][loc["col"] : loc["end_col"]] == "wp.sqroot"
    # the good kernel still compiles (isolated) and passes its contract
    assert k["good"]["compile"]["cpu"] in ("compiled", "cached")
    assert k["good"]["validate"]["cpu"] == "pass"


def test_import_error_is_located(supervisor: Supervisor, workspace: Path) -> None:
    path = write(
        workspace,
        "noannot.py",
        """
        import warp as wp


        @wp.kernel
        def k(x):
            pass
    """,
    )
    r = supervisor.check(path).to_dict()
    (rec,) = by_rule(r, F.IMPORT_ERROR)
    assert r["status"] == "import-error" and "Incomplete argument annotations" in rec["message"]
    assert rec["location"]["line"] in (4, 5)
    syntax = supervisor.check(write(workspace, "syntax.py", "import warp as wp\ndef f(:\n")).to_dict()
    assert by_rule(syntax, F.IMPORT_ERROR)[0]["stage"] == "syntax"
    assert by_rule(syntax, F.IMPORT_ERROR)[0]["location"]["line"] == 2


def test_passing_contract_validates_and_benchmarks(supervisor: Supervisor, workspace: Path) -> None:
    shutil.copy(EXAMPLES / "saxpy.py", workspace / "saxpy.py")
    r = supervisor.check(workspace / "saxpy.py").to_dict()
    assert r["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}
    (ok,) = by_rule(r, F.VALIDATED)
    assert "1 edge case" in ok["message"] and str(r["seed"]) in ok["message"]
    bench = r["kernels"]["saxpy"]["bench"]["cpu"]
    assert bench["repeats"] >= 5 and bench["rotated_sets"] == 3 and bench["median_s"] > 0
    assert bench["metrics"]["bandwidth_gbs"] > 0 and "bandwidth_util" in bench["metrics"]
    assert not [rec for rec in r["records"] if rec["severity"] == "error"]


def test_sibling_contract_is_discovered(supervisor: Supervisor, workspace: Path) -> None:
    for name in ("scale.py", "scale_contract.py"):
        shutil.copy(EXAMPLES / name, workspace / name)
    r = supervisor.check(workspace / "scale.py").to_dict()
    assert r["kernels"]["scale"]["validate"] == {"cpu": "pass"}
    assert any(d[0].endswith("scale_contract.py") for d in r["deps"])


def test_boundary_failure_is_reported_shrunk_and_recorded(supervisor: Supervisor, workspace: Path) -> None:
    shutil.copy(EXAMPLES / "boundary_bug.py", workspace / "boundary_bug.py")
    r = supervisor.check(workspace / "boundary_bug.py").to_dict()
    (rec,) = by_rule(r, F.UNWRITTEN)
    assert rec["severity"] == "error" and rec["location"]["kernel"] == "shift_add"
    assert "boundary" in rec["hint"]
    assert "where the first bad index was 15" in rec["message"]  # size 16 fails at its last element
    (failure,) = [f for f in r["failures"] if f["kind"] == "numeric"]
    assert failure["size"] < failure["original_size"] == 16 and failure["inputs"] is not None
    assert failure["localized"] == "no-bounds-error"  # the debug re-run ran: nothing out of bounds
    (note,) = by_rule(r, F.BOUNDS)
    assert note["severity"] == "info" and "no out-of-bounds access" in note["message"]


def test_wrong_values_report_count_error_and_index(supervisor: Supervisor, workspace: Path) -> None:
    path = write(
        workspace,
        "wrong.py",
        """
        import numpy as np
        import warp as wp
        from warp_harness.contract import Contract


        @wp.kernel
        def add_one(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            if i == 5:
                y[i] = x[i] + 2.0
            else:
                y[i] = x[i] + 1.0


        contract = Contract(kernel=add_one, reference=lambda x: x + 1, outputs=["y"], sizes=[3, 64],
                            inputs=lambda n, rng: {"x": np.ones(n, np.float32), "y": np.empty(n, np.float32)})
    """,
    )
    r = supervisor.check(path).to_dict()
    (rec,) = by_rule(r, F.MISMATCH)
    assert "1 of 6 elements" in rec["message"] and "first bad index 5" in rec["message"]
    assert "shrunk from size 64" in rec["message"]
    assert rec["expected"] == 2.0 and rec["actual"] == 3.0


def test_missed_performance_target(supervisor: Supervisor, workspace: Path) -> None:
    shutil.copy(EXAMPLES / "slow_target.py", workspace / "slow_target.py")
    r = supervisor.check(workspace / "slow_target.py").to_dict()
    missed = by_rule(r, F.TARGET_MISSED)
    assert {m["expected"] for m in missed} == {0.5, 0.8}
    assert r["kernels"]["row_sum"]["validate"] == {"cpu": "pass"}


def test_segfault_kills_only_the_worker(supervisor: Supervisor, workspace: Path) -> None:
    shutil.copy(EXAMPLES / "oob_crash.py", workspace / "oob_crash.py")
    before = supervisor.restarts
    steps: list[dict[str, Any]] = []
    r = supervisor.check(workspace / "oob_crash.py", on_progress=steps.append).to_dict()
    # the seconds a fresh worker takes to import Warp after the crash are announced, not silent
    assert {"stage": "worker-restart"} in steps, steps
    (crash,) = by_rule(r, F.CRASH)
    assert "SIGSEGV" in crash["message"] and crash["location"]["kernel"] == "scatter"
    assert crash["location"]["line"] == def_line(workspace / "oob_crash.py", "scatter")
    # the debug-mode re-run with the bounds probe places it on the access itself
    (bounds,) = by_rule(r, F.BOUNDS)
    line, col, end_col = access_span(workspace / "oob_crash.py", "out[i * 100000000]")
    assert bounds["severity"] == "error" and bounds["location"]["line"] == line
    assert (bounds["location"]["col"], bounds["location"]["end_col"]) == (col, end_col)
    assert "indexes `out` out of bounds" in bounds["message"] and "size 64" in bounds["message"]
    assert bounds["related"][0]["location"]["line"] == crash["location"]["line"]  # the kernel's def
    # the other kernel of the module still got its verdict
    assert r["kernels"]["copy"]["validate"] == {"cpu": "pass"}
    assert r["kernels"]["scatter"]["validate"] == {"cpu": "crash"}
    assert supervisor.restarts > before and supervisor.worker is not None and supervisor.worker.alive()


def test_debug_bounds_assertion_crash(supervisor: Supervisor, workspace: Path) -> None:
    path = write(
        workspace,
        "offbyone.py",
        """
        import numpy as np
        import warp as wp
        from warp_harness.contract import Contract


        @wp.kernel
        def shift(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            i = wp.tid()
            y[i + 1] = x[i]


        contract = Contract(kernel=shift, reference=lambda x: x, outputs=["y"], sizes=[8],
                            inputs=lambda n, rng: {"x": np.ones(n, np.float32), "y": np.empty(n, np.float32)})
    """,
    )
    r = supervisor.check(path, options=FAST.merged({"mode": "debug"})).to_dict()
    (rec,) = by_rule(r, F.BOUNDS)
    assert "SIGILL" in rec["message"] and rec["location"]["kernel"] == "shift"
    assert any(f["kind"] == "crash" and f["size"] == 8 for f in r["failures"])
    # Warp's own assertion points at native/array.h; the probe re-run names the Python access
    line, col, end_col = access_span(path, "y[i + 1]")
    loc = rec["location"]
    assert (loc["line"], loc["col"], loc["end_col"]) == (line, col, end_col), rec
    assert "indexes `y` out of bounds at line" in rec["message"]
    assert any(f.get("localized") == "line" for f in r["failures"])


def test_hang_times_out_and_the_worker_keeps_serving(supervisor: Supervisor, workspace: Path) -> None:
    shutil.copy(EXAMPLES / "hang.py", workspace / "hang.py")
    r = supervisor.check(workspace / "hang.py").to_dict()
    (rec,) = by_rule(r, F.TIMEOUT)
    assert rec["location"]["kernel"] == "spin" and "2 s limit" in rec["message"]
    again = supervisor.check(workspace / "saxpy.py").to_dict()
    assert again["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}


def test_changing_fast_math_or_mode_really_recompiles(supervisor: Supervisor, workspace: Path) -> None:
    path = write(
        workspace,
        "opts.py",
        """
        import warp as wp


        @wp.kernel
        def k(x: wp.array(dtype=float)):
            x[wp.tid()] = wp.sin(x[wp.tid()])
    """,
    )
    results = {}
    for name, opts in [
        ("default", FAST),
        ("fast_math", FAST.merged({"fast_math": True})),
        ("debug", FAST.merged({"mode": "debug"})),
        ("default again", FAST),
    ]:
        r = supervisor.check(path, options=opts).to_dict()
        results[name] = (r["kernels"]["k"]["compile"]["cpu"], r["build_keys"]["k@cpu"])
    keys = {name: key for name, (_, key) in results.items()}
    assert len({keys["default"], keys["fast_math"], keys["debug"]}) == 3
    assert results["fast_math"][0] == "compiled" and results["debug"][0] == "compiled"
    assert results["default again"] == ("cached", keys["default"])
    folder = kernel_cache.cache_root(workspace)  # the user's private cache, never the workspace's (#30)
    for key in keys.values():
        assert any(p.suffix == ".o" for p in (folder / key).rglob("*"))


def test_missing_gpu_skips_cleanly(supervisor: Supervisor, workspace: Path) -> None:
    import warp as wp

    if wp.get_cuda_device_count() > 0:
        pytest.skip("a CUDA device is present")
    r = supervisor.check(
        workspace / "saxpy.py", options=FAST.merged({"devices": ["cpu", "cuda:0"]})
    ).to_dict()
    (skip,) = by_rule(r, F.DEVICE_SKIPPED)
    assert skip["severity"] == "info" and "cuda:0" in skip["message"]
    assert r["devices"] == ["cpu"] and r["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}
    assert F.CRASH not in rules_of(r)


@pytest.mark.gpu
def test_cuda_device_validates() -> None:  # pragma: no cover - needs a GPU
    import warp as wp

    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    ws = EXAMPLES
    with Supervisor(ws, FAST.merged({"devices": ["cuda:0"]})) as sup:
        r = sup.check(ws / "saxpy.py").to_dict()
    assert r["kernels"]["saxpy"]["validate"] == {"cuda:0": "pass"}
    assert r["kernels"]["saxpy"]["bench"]["cuda:0"]["timer"] == "cuda events"


def test_memory_limit(workspace: Path) -> None:
    path = write(
        workspace,
        "hog.py",
        """
        import numpy as np
        import warp as wp

        BIG = np.ones(1 << 31)  # 16 GiB


        @wp.kernel
        def k(x: wp.array(dtype=float)):
            pass
    """,
    )
    with Supervisor(workspace, FAST.merged({"memory_mb": 2048}), warmup=False) as sup:
        r = sup.check(path).to_dict()
    assert F.MEMORY in rules_of(r)


def test_module_options_do_not_leak_between_saves(supervisor: Supervisor, workspace: Path) -> None:
    """Warp reuses a module object on re-import; a removed set_module_options must not stick."""
    src = """
        import warp as wp
        {line}

        @wp.kernel
        def k(x: wp.array(dtype=float)):
            x[wp.tid()] = 1.0
    """
    path = write(workspace, "sticky.py", src.format(line='wp.set_module_options({"fast_math": True})'))
    with_fm = supervisor.check(path).to_dict()["build_keys"]["k@cpu"]
    write(workspace, "sticky.py", src.format(line=""))
    without = supervisor.check(path).to_dict()["build_keys"]["k@cpu"]
    write(workspace, "sticky.py", src.format(line='wp.set_module_options({"fast_math": True})'))
    assert with_fm != without
    assert supervisor.check(path).to_dict()["build_keys"]["k@cpu"] == with_fm


def test_implausible_speed_is_flagged(supervisor: Supervisor, workspace: Path) -> None:
    """Validation passes (the reference is all zeros), but the kernel skips the work its contract
    declares: the bandwidth it would need is far above the CPU profile's peak."""
    shutil.copy(EXAMPLES / "too_fast.py", workspace / "too_fast.py")
    r = supervisor.check(workspace / "too_fast.py").to_dict()
    # the kernel's worker passed it, and the supervisor withdrew that: zeros already pass (#37)
    assert r["kernels"]["row_means"]["validate"] == {"cpu": "error"} and by_rule(r, F.VACUOUS_CHECK)
    (flag,) = by_rule(r, F.IMPLAUSIBLE)
    metrics = r["kernels"]["row_means"]["bench"]["cpu"]["metrics"]
    assert flag["severity"] == "warning" and flag["location"]["kernel"] == "row_means"
    assert "bandwidth_util" in flag["message"] and "beyond the hardware peak" in flag["message"]
    assert metrics["bandwidth_util"] > 1.5 and metrics["bandwidth_gbs"] > 1.5 * 50.0  # cpu.toml: 50 GB/s
    # an honest kernel with honest bytes is not flagged (same profile, same timer)
    shutil.copy(EXAMPLES / "saxpy.py", workspace / "saxpy.py")
    honest = supervisor.check(workspace / "saxpy.py").to_dict()
    assert honest["kernels"]["saxpy"]["bench"]["cpu"]["metrics"]["bandwidth_util"] < 1.5
    assert F.IMPLAUSIBLE not in rules_of(honest)


ROTATE = """
import numpy as np
import warp as wp
from warp_harness.contract import Contract


@wp.kernel
def rotate(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    out[i] = x[i + 1] + 0.0 * v  # BUG: should wrap around, x[(i + 1) % n]


contract = Contract(kernel=rotate, reference=lambda x: {"out": np.roll(x, -1)}, outputs=["out"],
                    sizes=[16], inputs=lambda n, rng: {"x": rng.random(n, dtype=np.float32) + 1.0,
                                                      "out": np.empty(n, np.float32)})
"""


def test_silent_read_past_the_end_is_placed_on_its_line(supervisor: Supervisor, workspace: Path) -> None:
    """Release build: reading one past the end does not crash, the last element is wrong; the
    debug re-run with the bounds probe names the access (not the def line, not array.h).

    What the release build reads past the end is whatever memory follows `x`: often a plausible
    float (a mismatch), sometimes the NaN poison of the next buffer (seen in CI), so any numeric
    verdict is right; the bounds record is what must be there and placed exactly."""
    path = write(workspace, "rotate.py", ROTATE)
    r = supervisor.check(path).to_dict()
    assert r["kernels"]["rotate"]["validate"] == {"cpu": "fail"}
    assert {F.MISMATCH, F.UNWRITTEN, F.NONFINITE} & set(rules_of(r))
    (rec,) = by_rule(r, F.BOUNDS)
    line, col, end_col = access_span(path, "x[i + 1]")
    assert rec["severity"] == "error"
    assert (rec["location"]["line"], rec["location"]["col"], rec["location"]["end_col"]) == (
        line,
        col,
        end_col,
    )
    assert "indexes `x` out of bounds" in rec["message"] and "`x[i + 1]`" in rec["message"]


def test_rebuilds_do_not_accumulate_old_kernel_versions(supervisor: Supervisor, workspace: Path) -> None:
    """Warp keeps every still-referenced kernel object of a module and builds them all: without
    forgetting them on re-import each save added a copy of the previous version to the build."""
    src = """
        import warp as wp


        @wp.kernel
        def k(x: wp.array(dtype=float)):
            x[wp.tid()] = {value}
    """
    path = write(workspace, "versions.py", src.format(value="1.0"))
    first = supervisor.check(path).to_dict()["build_keys"]["k@cpu"]
    for value in ("2.0", "3.0", "4.0"):
        write(workspace, "versions.py", src.format(value=value))
        key = supervisor.check(path).to_dict()["build_keys"]["k@cpu"]
    folder = kernel_cache.cache_root(workspace) / key
    (cpp,) = folder.rglob("*.cpp")
    assert cpp.read_text().count("_cpu_kernel_forward(") == 1  # only the current `k`
    write(workspace, "versions.py", src.format(value="1.0"))
    back = supervisor.check(path).to_dict()
    assert back["build_keys"]["k@cpu"] == first and back["kernels"]["k"]["compile"]["cpu"] == "cached"
