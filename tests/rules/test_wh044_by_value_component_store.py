"""WH044: writes into components or fields of by-value parameters (lost when the thread or function ends)."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.struct
class Body:
    x: wp.vec3
    hits: wp.array(dtype=int)


@wp.kernel
def move(b: Body, lower: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    b.x += wp.vec3(1.0, 1.0, 1.0)
    lower[i] = -1.0


@wp.func
def reset(b: Body):
    b.x = wp.vec3(0.0)


@wp.kernel
def reset_all(bodies: wp.array(dtype=Body)):
    i = wp.tid()
    reset(bodies[i])


def run():
    b = Body()
    b.x = wp.vec3(1.0, 1.0, 1.0)
    b.hits = wp.zeros(1, dtype=int, device="cpu")
    lower = wp.vec3(0.0, 0.0, 0.0)
    wp.launch(move, dim=3, inputs=[b, lower, wp.zeros(3, dtype=float, device="cpu")], device="cpu")
    return np.array([*b.x, *lower])
"""

GOOD = """
import numpy as np
import warp as wp


@wp.struct
class Body:
    x: wp.vec3
    hits: wp.array(dtype=int)


@wp.kernel
def count(b: Body, v: wp.vec3, out: wp.array(dtype=float)):
    i = wp.tid()
    b.hits[0] = 1
    v[0] = 2.0
    out[i] = v[0]


@wp.func
def moved(b: Body) -> Body:
    b.x = wp.vec3(0.0)
    return b


@wp.func
def shifted(p: wp.vec3) -> wp.vec3:
    p[0] = p[0] + 1.0
    q = p
    return q


@wp.kernel
def reset_all(bodies: wp.array(dtype=Body), pts: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    bodies[i] = moved(bodies[i])
    pts[i] = shifted(pts[i])


def run():
    b = Body()
    b.hits = wp.zeros(1, dtype=int, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(count, dim=2, inputs=[b, wp.vec3(0.0, 0.0, 0.0), out], device="cpu")
    return np.array([*b.hits.numpy(), *out.numpy()])
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_writes_into_by_value_parameters_are_warnings(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH044"])
    assert [r.location.line for r in records] == [
        _line(BAD, "b.x += "),
        _line(BAD, "lower[i] = -1.0"),
        _line(BAD, "b.x = wp.vec3(0.0)"),
    ]
    assert all(r.severity is Severity.WARNING for r in records)
    assert "host never sees it" in records[0].message and "caller never sees it" in records[2].message


def test_writes_through_array_fields_returned_values_and_locals_are_fine(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH044"]) == []
    assert warp_error(GOOD) is None


@pytest.mark.slow
def test_warp_drops_the_writes_and_keeps_the_ones_through_arrays() -> None:
    assert warp_error(BAD) is None
    # the host's struct and vector keep their values: the kernel wrote into copies
    assert np.allclose(run_source(BAD), [1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    assert np.allclose(run_source(GOOD), [1.0, 2.0, 2.0])
