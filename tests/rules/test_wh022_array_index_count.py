from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

PRELUDE = """
import warp as wp


@wp.struct
class Grid:
    phi: wp.array2d(dtype=float)


"""

KERNEL = """@wp.kernel
def k(img: wp.array2d(dtype=float), out: wp.array(dtype=float), pts: wp.array(dtype=wp.vec3),
      frames: wp.array(dtype=wp.mat33), grid: Grid, vol: wp.array(dtype=float, ndim=3)):
    i = wp.tid()
{body}
"""

# (body line, what Warp says): each one is its own module, so Warp reports each
REJECTED = [
    ("    x = img[i, 0, 1]", "got 3 indices for a 2 dimensional array"),
    ("    x = pts[i, 0]", "got 2 indices for a 1 dimensional array"),
    ("    pts[i, 2] = 1.0", "got 2 indices for a 1 dimensional array"),
    ("    x = frames[i, 0, 1]", "got 3 indices for a 1 dimensional array"),
    ("    img[i] = 1.0", "The number of indices provided (1) does not match the array dimensions (2)"),
    ("    img[i] += 1.0", "Num indices < num dimensions for atomic_add()"),
    ("    vol[i, 0] = 1.0", "The number of indices provided (2) does not match the array dimensions (3)"),
    ("    out[i] = img[i]", "array_store() value argument type (array(ndim=1, dtype=float32))"),
    ("    x = img[i] * 2.0", "Couldn't find function overload for 'mul'"),
    ("    x = 1.0 + grid.phi[i]", "Couldn't find function overload for 'add'"),
    ("    x = -img[i]", "Couldn't find function overload for 'neg'"),
    ("    s = float(0.0)\n    s += img[i]", "Couldn't find function overload for 'add'"),
    ("    x = vol[i, 1] * 2.0", "Couldn't find function overload for 'mul'"),
]


def _module(body: str) -> str:
    return PRELUDE + KERNEL.format(body=body)


@pytest.mark.parametrize(("body", "warp_says"), REJECTED, ids=[b.strip() for b, _ in REJECTED])
def test_each_wrong_index_count_is_flagged_and_warp_rejects_it(
    analyse: Analyse, body: str, warp_says: str
) -> None:
    source = _module(body)
    (record,) = analyse(source, select=["WH022"])
    assert record.severity.value == "error"
    assert record.location.line == len(source.splitlines())  # the body's last line
    error = warp_error(source)
    assert error is not None and warp_says in error, error


def test_messages_say_what_the_index_gives(analyse: Analyse) -> None:
    (too_many,) = analyse(_module("    x = img[i, 0, 1]"), select=["WH022"])
    assert too_many.message.startswith("`img[i, 0, 1]` indexes `img` with 3 indices, but it is a 2-D array")
    (store,) = analyse(_module("    img[i] = 1.0"), select=["WH022"])
    assert "`img[i]` is a 1-D view (a row), not an element" in store.message
    (arithmetic,) = analyse(_module("    x = img[i] * 2.0"), select=["WH022"])
    assert "not a float32 element, and is the operand of `*`" in arithmetic.message
    (nested,) = analyse(_module("    x = vol[i, 1] * 2.0"), select=["WH022"])
    assert "it is a 1-D view (a row)" in nested.message and "3-D array `vol` with 2 indices" in nested.message


@pytest.mark.slow
def test_a_comparison_with_a_row_fails_in_the_cpp_compiler(analyse: Analyse) -> None:
    source = (
        PRELUDE
        + """@wp.kernel
def k(img: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if img[i] > 0.5:
        out[i] = 1.0


def run():
    img = wp.zeros((2, 2), dtype=float, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(k, dim=2, inputs=[img, out], device="cpu")
"""
    )
    (record,) = analyse(source, select=["WH022"])
    assert "compared (the C++ compiler refuses it)" in record.message
    assert warp_error(source) is None  # code generation lets it through
    error = warp_error(source, launch=True)
    assert error is not None and "CPU kernel build failed" in error, error


def test_a_func_returning_a_row_as_a_scalar_is_flagged(analyse: Analyse) -> None:
    source = (
        PRELUDE
        + """@wp.func
def first(a: wp.array2d(dtype=float), i: int) -> float:
    return a[i]


@wp.func
def row_of(a: wp.array2d(dtype=float), i: int):
    return a[i]


@wp.kernel
def k(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = first(a, i)
    r = row_of(a, i)
"""
    )
    (record,) = analyse(source, select=["WH022"])
    assert (
        record.location.kernel == "first" and "returned from a function annotated to return" in record.message
    )
    error = warp_error(source)
    assert error is not None and "returns a value of type `Array[float32]`" in error


LEGAL = (
    PRELUDE
    + """@wp.func
def row_sum(r: wp.array(dtype=float)) -> float:
    s = float(0.0)
    for j in range(r.shape[0]):
        s += r[j]
    return s


@wp.kernel
def k(img: wp.array2d(dtype=float), out: wp.array(dtype=float), pts: wp.array(dtype=wp.vec3),
      frames: wp.array(dtype=wp.mat33), grid: Grid, vol: wp.array3d(dtype=float),
      m: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    row = img[i]
    x = row[0] + img[i][1] + img[i, 0] + grid.phi[i, 0]
    n = img[i].shape[0]
    out[i] = row_sum(img[i]) + float(n)
    img[i][0] = 2.0
    img[i, 1] += 1.0
    c = pts[i][0] + pts[i].x + frames[i][0, 1] + frames[i][1][2]
    pts[i][2] = c
    plane = vol[i]
    y = plane[0, 0] + vol[i][0][1] + vol[i, 0, 1]
    col = img[i, -1]
    part = img[i, 1:]
    z = m[i, 0][1]
    out[i] = x + y + col + z
"""
)


def test_legal_indexing_is_not_flagged(analyse: Analyse) -> None:
    assert analyse(LEGAL, select=["WH022"]) == []


def test_warp_builds_the_legal_indexing() -> None:
    assert warp_error(LEGAL) is None


def test_unknown_ranks_are_left_alone(analyse: Analyse) -> None:
    source = """
import warp as wp
from typing import Any

NDIM = 2


def make(ndim):
    @wp.kernel
    def k(a: wp.array(dtype=float, ndim=ndim), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i]
    return k


@wp.kernel
def tuple_index(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    idx = (i, 0)
    out[i] = a[idx]
"""
    assert analyse(source, select=["WH022"]) == []


def test_the_fix_indexes_the_vector_or_matrix_element(analyse: Analyse) -> None:
    source = _module(
        "    x = pts[i, 0] + frames[i, 0, 1]\n    pts[i, 2] = x\n    y = frames[i, 1]\n    z = img[i, 0, 1]"
    )
    records = analyse(source, select=["WH022"])
    assert len(records) == 5
    # `frames[i, 1]`: a row of the matrix, or a 2-D array meant? no fix
    assert [r.fix is not None for r in records] == [True, True, True, False, False]
    fixed, applied = apply_fixes(source, records)
    assert applied == 3
    assert "    x = pts[i][0] + frames[i][0, 1]\n    pts[i][2] = x\n    y = frames[i, 1]\n" in fixed
    left = analyse(fixed, select=["WH022"])
    assert [r.message.split(" indexes ")[0] for r in left] == ["`frames[i, 1]`", "`img[i, 0, 1]`"]
    assert warp_error(fixed.replace("    z = img[i, 0, 1]", "").replace("    y = frames[i, 1]\n", "")) is None
