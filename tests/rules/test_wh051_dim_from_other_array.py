"""WH051: a launch dim read off one array indexes another known to be shorter. Motivated by NVIDIA/warp's
GMRES dot product, which took its width from the first operand (NVIDIA/warp@9f8343d)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bounds_trap import run_in_debug_mode
from checker_helpers import Analyse

from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def column_dot(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    col, i = wp.tid()
    wp.atomic_add(out, col, a[col, i] * b[col, i])


def run():
    restart, active, n = 4, 2, 3  # GMRES at step 1: two active rows of the basis
    w = wp.array(np.ones((restart, n), dtype=np.float32), dtype=float, device="cpu")
    rows = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype=np.float32)
    basis = wp.array(rows, dtype=float, device="cpu")
    out = wp.zeros(restart, dtype=float, device="cpu")
    wp.launch(column_dot, dim=w.shape, inputs=[w, basis, out], device="cpu")
    return out.numpy()[:active]
"""
GOOD = BAD.replace("dim=w.shape", "dim=basis.shape")

QUIET = """
import warp as wp


@wp.kernel
def scale(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = 2.0 * src[i]


@wp.kernel
def guarded(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    if i >= dst.shape[0]:
        return
    dst[i] = 2.0 * src[i]


def run(n: int):
    src = wp.zeros(n + 1, dtype=float)
    same = wp.zeros(n + 1, dtype=float)
    longer = wp.zeros(n + 2, dtype=float)
    shorter = wp.zeros(n, dtype=float)
    wp.launch(scale, dim=src.shape, inputs=[src, same])
    wp.launch(scale, dim=len(src), inputs=[src, longer])
    wp.launch(scale, dim=shorter.shape[0], inputs=[src, shorter])
    wp.launch(guarded, dim=src.shape, inputs=[src, shorter])
"""


def test_a_dim_from_the_longer_operand_indexing_the_shorter_one_is_an_error(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH051"])
    assert record.severity is Severity.ERROR and "b[col, i]" in record.message
    assert "from `w` (4 elements along axis 0)" in record.message and "2 along axis 0" in record.message
    assert analyse(GOOD, select=["WH051"]) == []


def test_symbolic_extents_are_followed_through_len_and_a_local(analyse: Analyse) -> None:
    source = QUIET + (
        "\n\ndef bad(n: int):\n    src = wp.zeros(n + 1, dtype=float)\n    dst = wp.zeros(n, dtype=float)\n"
        "    size = src.shape[0]\n    wp.launch(scale, dim=size, inputs=[src, dst])\n"
    )
    (record,) = analyse(source, select=["WH051"])
    assert record.severity is Severity.ERROR and "the last 1 value(s) of `i` write" in record.message


def test_equal_or_larger_arrays_and_guards_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH051"]) == []


@pytest.mark.slow
def test_debug_mode_traps_the_bad_launch_and_runs_the_fix(tmp_path: Path) -> None:
    bad, good = run_in_debug_mode(tmp_path, [BAD, GOOD])
    assert bad.trapped, bad.output[-1500:]
    np.testing.assert_allclose(good.result, [3.0, 12.0])  # type: ignore[arg-type]
