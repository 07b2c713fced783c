"""WH025: an integer `/` converted to a float (Warp truncates the quotient first)."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.kernel
def sample_line(out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = float(i / (n - 1))


@wp.kernel
def sample_grid(out: wp.array2d(dtype=wp.vec3), nx: int, ny: int, h: float):
    i, j = wp.tid()
    u = i / nx
    v = wp.float32(j / ny)
    out[i, j] = wp.vec3(float(u) * h, v * h, 0.0)
"""

GOOD = """
import warp as wp


@wp.kernel
def pixels(out: wp.array(dtype=wp.vec2), width: int):
    tid = wp.tid()
    x = (float(tid % width) + 0.5) * 0.2
    y = (float(tid / width) + 0.5) * 0.2
    out[tid] = wp.vec2(x, y)


@wp.kernel
def split(indices: wp.array(dtype=int), out: wp.array(dtype=float), width: int):
    linear = indices[wp.tid()]
    row = linear / width
    col = linear % width
    out[linear] = float(row) / float(width) + float(col)


@wp.kernel
def floats(out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = float(i) / float(n - 1) + float(i // 2) + float(i) / 2.0


@wp.kernel
def cells(out: wp.array(dtype=float), n: int, h: float):
    i = wp.tid()
    cell = i / n
    out[cell] = float(cell) * h
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_integer_quotients_converted_to_floats_are_flagged(analyse: Analyse) -> None:
    line, direct, via = analyse(BAD, select=["WH025"])
    assert all(r.severity is Severity.WARNING for r in (line, direct, via))
    assert line.location.line == _line(BAD, "float(i / (n - 1))")
    assert "`i / (n - 1)` divides two integers" in line.message and "truncates" in line.message
    assert line.expected == "float(i) / float(n - 1)"
    assert direct.location.line == _line(BAD, "wp.float32(j / ny)")
    assert via.location.line == _line(BAD, "float(u) * h") and "`u` (`i / nx`)" in via.message
    assert [r.location.line for r in via.related] == [_line(BAD, "u = i / nx")]


def test_the_fix_divides_as_floats(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH025"])
    assert [r.fix is not None for r in records] == [True, True, False]  # not through a local
    assert all(r.fix is None or not r.fix.safe for r in records)
    fixed, applied = apply_fixes(BAD, records, safe_only=False)
    assert applied == 2
    assert "out[i] = float(i) / float(n - 1)" in fixed and "v = wp.float32(j) / wp.float32(ny)" in fixed
    assert warp_error(fixed) is None


def test_truncation_on_purpose_and_float_division_pass(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH025"]) == []
    assert warp_error(GOOD) is None


RUN = """
import numpy as np
import warp as wp


@wp.kernel
def sample_line(out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = float(i / (n - 1))


@wp.kernel
def sample_fixed(out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = float(i) / float(n - 1)


@wp.kernel
def truncation(out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = (i - 5) / 2


def run():
    bad = wp.zeros(5, dtype=float, device="cpu")
    good = wp.zeros(5, dtype=float, device="cpu")
    ints = wp.zeros(3, dtype=int, device="cpu")
    wp.launch(sample_line, dim=5, inputs=[bad, 5], device="cpu")
    wp.launch(sample_fixed, dim=5, inputs=[good, 5], device="cpu")
    wp.launch(truncation, dim=3, inputs=[ints], device="cpu")
    raise RuntimeError(
        f"RESULT bad={bad.numpy().tolist()} good={good.numpy().tolist()} ints={ints.numpy().tolist()}"
    )
"""


@pytest.mark.slow
def test_on_the_cpu_warp_truncates_toward_zero_and_the_samples_collapse() -> None:
    error = warp_error(RUN, launch=True)
    assert error is not None, error
    assert "bad=[0.0, 0.0, 0.0, 0.0, 1.0]" in error, error
    assert "good=[0.0, 0.25, 0.5, 0.75, 1.0]" in error, error
    assert "ints=[-2, -2, -1]" in error, error  # C's truncation, not Python's floor (-3, -2, -2)
