"""WH052: ``a[i + c]`` with the launch dim plus ``c`` past the array's extent, no guard (NVIDIA/warp#667), and
``if i > count: return`` guards that let ``i == count`` through (google-deepmind/mujoco_warp@0934504)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bounds_trap import run_in_debug_mode
from checker_helpers import Analyse
from warp_run import run_source

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def add(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    a[i] += b[i + 2]


def run():
    a = wp.array([1.0, 1.0, 1.0], dtype=float, device="cpu")
    b = wp.array([1.0, 2.0, 3.0, 4.0], dtype=float, device="cpu")
    wp.launch(add, dim=3, inputs=[a, b], device="cpu")
    return a.numpy()
"""
GOOD = BAD.replace("dim=3", "dim=b.shape[0] - 2")

QUIET = """
import warp as wp


@wp.kernel
def diff(x: wp.array(dtype=float), d: wp.array(dtype=float)):
    i = wp.tid()
    d[i] = x[i + 1] - x[i]


@wp.kernel
def guarded(x: wp.array(dtype=float), d: wp.array(dtype=float)):
    i = wp.tid()
    if i + 1 < x.shape[0]:
        d[i] = x[i + 1] - x[i]


@wp.kernel
def clamped(x: wp.array(dtype=float), d: wp.array(dtype=float)):
    i = wp.tid()
    d[i] = x[wp.min(i + 1, x.shape[0] - 1)] - x[i]


def run(n: int):
    x = wp.zeros(n, dtype=float)
    d = wp.zeros(n, dtype=float)
    wp.launch(diff, dim=n - 1, inputs=[x, d])
    wp.launch(diff, dim=x.shape[0] - 1, inputs=[x, d])
    wp.launch(guarded, dim=n, inputs=[x, d])
    wp.launch(clamped, dim=n, inputs=[x, d])
"""


def test_an_offset_read_past_the_end_is_an_error(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH052"])
    assert record.severity is Severity.ERROR
    assert record.location.line == BAD.splitlines().index("    a[i] += b[i + 2]") + 1
    assert "`b` has `4` element(s)" in record.message and "up to index `4`" in record.message
    assert analyse(GOOD, select=["WH052"]) == []


def test_a_forward_difference_over_n_threads_reads_one_past_the_end(analyse: Analyse) -> None:
    source = QUIET.replace("wp.launch(diff, dim=n - 1,", "wp.launch(diff, dim=n,")
    (record,) = analyse(source, select=["WH052"])
    assert "`x[i + 1]`" in record.message and "the last 1 value(s) of `i` read" in record.message


def test_launches_that_fit_guards_and_clamps_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH052"]) == []


@pytest.mark.slow
def test_debug_mode_traps_the_offset_read_and_runs_the_fix(tmp_path: Path) -> None:
    bad, good = run_in_debug_mode(tmp_path, [BAD, GOOD])
    assert bad.trapped, bad.output[-1500:]
    np.testing.assert_allclose(good.result, [4.0, 5.0, 1.0])  # type: ignore[arg-type]


# the guard lets the thread at the count through (google-deepmind/mujoco_warp@0934504)
INCLUSIVE = """
import numpy as np
import warp as wp


@wp.kernel
def init_p0(nefc_in: wp.array(dtype=int), jv_in: wp.array2d(dtype=float), p0_out: wp.array(dtype=float)):
    worldid, efcid = wp.tid()
    if efcid > nefc_in[worldid]:
        return
    wp.atomic_add(p0_out, worldid, jv_in[worldid, efcid])


def run():
    nefc = wp.array(np.array([2, 3], dtype=np.int32), dtype=int, device="cpu")
    # rows past a world's active count hold stale values
    jv = wp.array(np.array([[1, 2, 9, 9], [1, 1, 1, 9]], dtype=np.float32), dtype=float, device="cpu")
    p0 = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(init_p0, dim=(2, 4), inputs=[nefc, jv, p0], device="cpu")
    return p0.numpy()
"""
QUIET_GUARDS = """
import warp as wp


@wp.kernel
def exclusive(nefc_in: wp.array(dtype=int), jv_in: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, efcid = wp.tid()
    if efcid >= nefc_in[worldid]:
        return
    out[worldid, efcid] = jv_in[worldid, efcid]


@wp.kernel
def last_index(last_in: wp.array(dtype=int), jv_in: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, efcid = wp.tid()
    if efcid > last_in[worldid]:
        return
    out[worldid, efcid] = jv_in[worldid, efcid]
"""


def test_a_guard_that_lets_the_count_through_is_a_warning_with_an_offered_fix(analyse: Analyse) -> None:
    (record,) = analyse(INCLUSIVE, select=["WH052"])
    assert (
        record.severity is Severity.WARNING and "lets `efcid == nefc_in[worldid]` through" in record.message
    )
    assert record.fix is not None and not record.fix.safe
    fixed, applied = apply_fixes(INCLUSIVE, [record], safe_only=False)
    assert applied == 1 and "if efcid >= nefc_in[worldid]:" in fixed
    assert analyse(fixed, select=["WH052"]) == []
    assert analyse(QUIET_GUARDS, select=["WH052"]) == []


@pytest.mark.slow
def test_warp_adds_the_stale_row_past_the_count_and_the_fix_does_not() -> None:
    fixed = INCLUSIVE.replace("if efcid > nefc_in", "if efcid >= nefc_in")
    np.testing.assert_allclose(run_source(INCLUSIVE), [12.0, 12.0])  # the stale 9s
    np.testing.assert_allclose(run_source(fixed), [3.0, 3.0])
