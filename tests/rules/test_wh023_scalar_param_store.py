"""WH023: a kernel updates a by-value parameter and never reads it again (the host never sees it)."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.kernel
def count_active(x: wp.array(dtype=float), count: int):
    i = wp.tid()
    if x[i] > 0.5:
        count = count + 1


@wp.kernel
def accumulate(x: wp.array(dtype=float), total: float, scale: float):
    i = wp.tid()
    total += x[i] * scale
    total -= 0.5
"""

GOOD = """
import warp as wp


@wp.kernel
def local_reuse(x: wp.array(dtype=float), n: int, out: wp.array(dtype=float)):
    i = wp.tid()
    n = n - 1
    out[i] = x[wp.min(i, n)]


@wp.kernel
def loop_sum(x: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
    i = wp.tid()
    for j in range(4):
        s += x[j]
    out[i] = s


@wp.kernel
def countdown(x: wp.array(dtype=float), n: int):
    i = wp.tid()
    while n > 0:
        n -= 1
        x[i] = x[i] + 1.0


@wp.kernel
def overwritten(x: wp.array(dtype=float), lo: float):
    i = wp.tid()
    lo = 0.25
    x[i] = wp.max(x[i], lo)


@wp.kernel
def clamped(x: wp.array(dtype=float), lo: float):
    i = wp.tid()
    lo = wp.max(lo, 0.0)
    x[i] = wp.max(x[i], lo)


@wp.kernel
def into_array(x: wp.array(dtype=float), count: wp.array(dtype=int)):
    i = wp.tid()
    if x[i] > 0.5:
        wp.atomic_add(count, 0, 1)
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_updates_of_by_value_parameters_are_flagged(analyse: Analyse) -> None:
    count, total = analyse(BAD, select=["WH023"])
    assert count.location.line == _line(BAD, "count = count + 1") and count.location.kernel == "count_active"
    assert count.severity is Severity.ERROR
    assert "`count` (int32)" in count.message and "host never sees it" in count.message
    assert total.location.line == _line(BAD, "total += x[i] * scale")
    assert [r.location.line for r in total.related] == [
        _line(BAD, "def accumulate"),
        _line(BAD, "total -= 0.5"),
    ]


def test_warp_compiles_the_update_without_a_word() -> None:
    assert warp_error(BAD) is None


def test_the_fix_makes_the_parameter_an_array_updated_atomically(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH023"])
    assert all(r.fix is not None and not r.fix.safe for r in records)  # the launch must change too
    fixed, applied = apply_fixes(BAD, records, safe_only=False)
    assert applied == 2
    assert "count: wp.array(dtype=int)" in fixed and "wp.atomic_add(count, 0, 1)" in fixed
    assert "total: wp.array(dtype=float)" in fixed
    assert "wp.atomic_add(total, 0, x[i] * scale)" in fixed and "wp.atomic_sub(total, 0, 0.5)" in fixed
    assert analyse(fixed, select=["WH023"]) == []
    assert warp_error(fixed) is None


def test_parameters_used_as_locals_are_not_flagged(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH023"]) == []
    assert warp_error(GOOD) is None


def test_a_read_before_the_update_does_not_observe_it(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float), limit: float):
    i = wp.tid()
    if x[i] > limit:
        limit += 1.0
"""
    (record,) = analyse(source, select=["WH023"])
    assert record.location.line == _line(source, "limit += 1.0")


RUN = """
import numpy as np
import warp as wp


@wp.kernel
def count_active(x: wp.array(dtype=float), count: int):
    i = wp.tid()
    if x[i] > 0.5:
        count = count + 1


@wp.kernel
def count_fixed(x: wp.array(dtype=float), count: wp.array(dtype=int)):
    i = wp.tid()
    if x[i] > 0.5:
        wp.atomic_add(count, 0, 1)


def run():
    x = wp.array(np.linspace(0.0, 1.0, 10, dtype=np.float32), device="cpu")
    count = 0
    args = [x, count]
    wp.launch(count_active, dim=10, inputs=args, device="cpu")
    fixed = wp.zeros(1, dtype=int, device="cpu")
    wp.launch(count_fixed, dim=10, inputs=[x, fixed], device="cpu")
    raise RuntimeError(f"RESULT count={count} args={args[1]} fixed={fixed.numpy()[0]}")
"""


@pytest.mark.slow
def test_on_the_cpu_the_host_never_sees_the_count() -> None:
    error = warp_error(RUN, launch=True)
    assert error is not None and "RESULT count=0 args=0 fixed=5" in error, error
