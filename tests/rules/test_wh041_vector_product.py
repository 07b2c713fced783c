"""WH041: `*` or `/` between two vectors (no Warp overload; `wp.cw_mul` / `wp.cw_div`)."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

KERNEL = """
import warp as wp


@wp.kernel
def k(a: wp.array(dtype={t}), b: wp.array(dtype={t}), s: float):
    i = wp.tid()
    {line}
"""


@pytest.mark.parametrize(
    ("dtype", "line", "op"),
    [
        ("wp.vec3", "a[i] = a[i] * b[i]", "mul"),
        ("wp.vec3", "a[i] = a[i] / b[i]", "div"),
        ("wp.vec2d", "a[i] = a[i] * b[i]", "mul"),
        ("wp.vec4i", "a[i] = a[i] / b[i]", "div"),
        ("wp.spatial_vector", "a[i] = a[i] * b[i]", "mul"),
        ("wp.quat", "a[i] = a[i] / b[i]", "div"),
    ],
)
def test_vector_products_are_errors_and_warp_agrees(analyse: Analyse, dtype: str, line: str, op: str) -> None:
    source = KERNEL.format(t=dtype, line=line)
    (record,) = analyse(source, select=["WH041"])
    assert f"Couldn't find function overload for '{op}'" in record.message
    error = warp_error(source)
    assert error is not None and f"overload for '{op}'" in error


def test_augmented_products_are_errors_too(analyse: Analyse) -> None:
    source = KERNEL.format(t="wp.vec3", line="v = a[i]\n    v *= b[i]\n    a[i] = v")
    (record,) = analyse(source, select=["WH041"])
    assert record.fix is None
    assert warp_error(source) is not None


@pytest.mark.parametrize(
    ("dtype", "line"),
    [
        ("wp.vec3", "a[i] = a[i] * s"),
        ("wp.vec3", "a[i] = s * a[i] / 2.0"),
        ("wp.vec3", "a[i] = a[i] + b[i]"),
        ("wp.vec3", "a[i] = a[i] % b[i]"),
        ("wp.quat", "a[i] = a[i] * b[i]"),
        ("wp.mat33", "a[i] = a[i] * b[i]"),
    ],
)
def test_products_warp_has_are_fine(analyse: Analyse, dtype: str, line: str) -> None:
    source = KERNEL.format(t=dtype, line=line)
    assert analyse(source, select=["WH041"]) == []
    assert warp_error(source) is None


def test_the_fix_writes_the_component_wise_builtin(analyse: Analyse) -> None:
    source = KERNEL.format(t="wp.vec3", line="a[i] = a[i] * b[i] + a[i] / b[i]")
    records = analyse(source, select=["WH041"])
    fixed, applied = apply_fixes(source, records, safe_only=False)
    assert applied == 2 and "wp.cw_mul(a[i], b[i]) + wp.cw_div(a[i], b[i])" in fixed
    assert analyse(fixed, select=["WH041"]) == []
    assert warp_error(fixed) is None
