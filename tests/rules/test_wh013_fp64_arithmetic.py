from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.record import Severity

BAD = """
import math

import warp as wp

C64 = wp.constant(wp.float64(2.0))


@wp.kernel
def scale(x: wp.array(dtype=wp.float64), s: wp.float64, v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    x[i] = wp.sqrt(x[i] * s)
    d = wp.float64(2.0)
    y = -d
    x[i] += d * C64
    x[i] = wp.length(v[i]) + math.sin(d)


@wp.func
def twice(a: wp.float64) -> wp.float64:
    return a * wp.float64(2.0)


@wp.kernel
def f32(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.sqrt(x[i] * 2.0)
"""


@pytest.mark.parametrize("target", ["sm_86", "sm_89"])
def test_one_info_per_kernel_on_low_fp64_targets(analyse: Analyse, target: str) -> None:
    records = analyse(BAD, select=["WH013"], target=target)
    assert [(r.location.kernel, r.location.line) for r in records] == [("scale", 12), ("twice", 21)]
    scale = records[0]
    assert scale.severity is Severity.INFO
    # sqrt, x[i] * s, -d, +=, d * C64, length, math.sin, + : loads, stores and wp.float64(...) do not count
    assert scale.actual == "8 float64 operations"
    assert f"{target} runs float64 at 1/64 of its float32 rate" in scale.message
    assert "(8 operations, the first here)" in scale.message
    assert records[1].actual == "1 float64 operation"
    # it is information only: the code is valid Warp
    assert warp_error(BAD) is None


@pytest.mark.parametrize("target", ["sm_80", "sm_90", "cpu"])
def test_silent_where_fp64_is_fast(analyse: Analyse, target: str) -> None:
    assert analyse(BAD, select=["WH013"], target=target) == []


def test_float32_and_conversions_are_not_fp64_arithmetic(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=wp.float64), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.float32(x[i]) * 2.0
    x[i] = wp.float64(y[i])
    x[i] = x[0]
"""
    assert analyse(source, select=["WH013"], target="sm_86") == []
    assert warp_error(source) is None
