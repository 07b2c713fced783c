from __future__ import annotations

from pathlib import Path

import pytest
import warp
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.kernel
def scale(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[j, i] = 2.0 * a[j, i]


def run(n, m):
    a = wp.zeros((m, n), dtype=float)
    out = wp.zeros((m, n), dtype=float)
    wp.launch(scale, dim=(n, m), inputs=[a, out])
"""

# the hint's rewrite: the last name now indexes the last axis, and the launch dims are swapped
SWAPPED = BAD.replace("i, j = wp.tid()", "j, i = wp.tid()").replace("dim=(n, m)", "dim=(m, n)")


def test_fast_index_on_the_slow_axis_is_flagged(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH012"])
    assert record.severity is Severity.WARNING and record.location.kernel == "scale"
    line = BAD.splitlines()[record.location.line - 1]
    assert line[record.location.col : record.location.end_col] == "out[j, i]"
    assert (
        "`j`, the fastest-varying thread index" in record.message and "last axis with `i`" in record.message
    )
    assert "j, i = wp.tid()" in (record.hint or "")
    assert [r.message.split(":")[0] for r in record.related] == [
        "`j` is the last name of `i, j = wp.tid()`",
        "`a[j, i]` is strided the same way",
    ]


def test_the_suggested_mapping_passes_and_both_compile(analyse: Analyse) -> None:
    assert analyse(SWAPPED, select=["WH012"]) == []
    assert warp_error(BAD) is None and warp_error(SWAPPED) is None


def test_inherent_transposes_and_mixed_kernels_are_not_flagged(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def transpose(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[i, j] = a[j, i]


@wp.kernel
def with_row_vector(a: wp.array2d(dtype=float), v: wp.array(dtype=float)):
    i, j = wp.tid()
    a[j, i] = v[j]


@wp.kernel
def computed(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j = wp.tid()
    col = 2 * j
    a[j, i] = b[i, col]


@wp.kernel
def through_func(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[j, i] = helper(b, i, j)


@wp.func
def helper(b: wp.array2d(dtype=float), i: int, j: int) -> float:
    return b[i, j]


@wp.kernel
def not_plain(a: wp.array2d(dtype=float), idx: wp.array(dtype=int)):
    i, j = wp.tid()
    a[idx[j], i] = 1.0


@wp.kernel
def one_d(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0
"""
    assert analyse(source, select=["WH012"]) == []


def test_short_fast_dimension_or_strided_views_are_not_flagged(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def scale(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[j, i] = 2.0 * a[j, i]


@wp.kernel
def scale_view(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[j, i] = 2.0 * a[j, i]


def run(n, a, b):
    wp.launch(scale, dim=(n, 3), inputs=[a])
    wp.launch(scale_view, dim=(n, n), inputs=[b.transpose()])
"""
    assert analyse(source, select=["WH012"]) == []


def test_three_dimensional_and_atomic_accesses(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def hist(a: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    wp.atomic_add(a, k, j, i, 1.0)
"""
    (record,) = analyse(source, select=["WH012"])
    assert (
        "`k`, the fastest-varying thread index" in record.message and "last axis with `i`" in record.message
    )
    assert warp_error(source) is None


EXAMPLES = Path(warp.__file__).parent / "examples"
MY_RULES = ["WH006", "WH007", "WH008", "WH010", "WH011", "WH012"]


@pytest.mark.parametrize("target", ["sm_86", "cpu"])
def test_warps_shipped_examples_are_clean(analyse: Analyse, target: str) -> None:
    files = sorted(EXAMPLES.rglob("*.py"))
    assert len(files) > 50
    found = []
    for file in files:
        records = analyse(file.read_text(encoding="utf-8"), path=str(file), select=MY_RULES, target=target)
        found += [
            f"{file.relative_to(EXAMPLES)}:{r.location.line} {r.rule} {r.message}"
            for r in records
            if r.severity in (Severity.ERROR, Severity.WARNING)
        ]
    assert found == []
