"""WH053: a store into an array the launch passes with a zero-length axis (mujoco_warp#1186)."""

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

SPARSE = False


@wp.kernel
def rows(nnz: wp.array(dtype=int), rownnz_out: wp.array2d(dtype=int), count_out: wp.array2d(dtype=int)):
    worldid, rowid = wp.tid()
    count_out[worldid, rowid] = 1
    rownnz_out[worldid, rowid] = nnz[rowid]


def run():
    nworld, nrow = 2, 4
    nnz = wp.array(np.arange(nrow, dtype=np.int32), dtype=int, device="cpu")
    rownnz = wp.zeros(shape=(nworld, 0), dtype=int, device="cpu")
    count = wp.zeros((nworld, nrow), dtype=int, device="cpu")
    wp.launch(rows, dim=(nworld, nrow), inputs=[nnz, rownnz, count], device="cpu")
    return count.numpy()
"""
GOOD = BAD.replace(
    "    rownnz_out[worldid, rowid] = nnz[rowid]\n",
    "    if wp.static(SPARSE):\n        rownnz_out[worldid, rowid] = nnz[rowid]\n",
)

QUIET = """
import warp as wp


@wp.kernel
def rows(flag: int, rownnz_out: wp.array2d(dtype=int), count_out: wp.array2d(dtype=int)):
    worldid, rowid = wp.tid()
    count_out[worldid, rowid] = 1
    if flag != 0:
        rownnz_out[worldid, rowid] = 1


@wp.kernel
def store(rownnz_out: wp.array2d(dtype=int)):
    worldid, rowid = wp.tid()
    rownnz_out[worldid, rowid] = 1


def run(nworld: int):
    empty = wp.zeros(shape=(2, 0), dtype=int)
    full = wp.zeros((2, 4), dtype=int)
    wp.launch(rows, dim=(2, 4), inputs=[0, empty, full])
    wp.launch(store, dim=(2, 4), inputs=[full])
    wp.launch(store, dim=(nworld, 0), inputs=[empty])
    wp.launch(store, dim=empty.shape, inputs=[empty])
"""


def test_an_unconditional_store_into_a_zero_length_axis_is_an_error(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH053"])
    assert record.severity is Severity.ERROR
    assert record.location.line == BAD.splitlines().index("    rownnz_out[worldid, rowid] = nnz[rowid]") + 1
    assert "no element along axis 1" in record.message
    assert analyse(GOOD, select=["WH053"]) == []


def test_an_early_exit_before_the_store_makes_it_a_warning(analyse: Analyse) -> None:
    source = BAD.replace("    count_out[worldid, rowid] = 1\n", "    if rowid >= 3:\n        return\n")
    (record,) = analyse(source, select=["WH053"])
    assert record.severity is Severity.WARNING


def test_conditional_stores_full_arrays_and_empty_launches_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH053"]) == []


@pytest.mark.slow
def test_debug_mode_traps_the_store_and_runs_the_fix(tmp_path: Path) -> None:
    bad, good = run_in_debug_mode(tmp_path, [BAD, GOOD])
    assert bad.trapped, bad.output[-1500:]
    np.testing.assert_array_equal(good.result, np.ones((2, 4)))  # type: ignore[arg-type]
