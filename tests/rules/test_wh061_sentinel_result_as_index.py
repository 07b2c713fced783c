"""WH061: an array indexed by a @wp.func result that may be its negative 'none' value
(NVIDIA/warp@12ab99736103b38ac527012cce9cfc69827c5252)."""

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

NULL_ELEMENT_INDEX = wp.constant(-1)


@wp.func
def cell_lookup(cell_size: float, res: int, x: float) -> int:
    i = int(wp.floor(x / cell_size))
    if i < 0 or i >= res:
        return NULL_ELEMENT_INDEX
    return i


@wp.kernel
def bin_particles(origin: wp.array(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    p = wp.tid()
    cell = cell_lookup(1.0, origin.shape[0], x[p])
    out[p] = x[p] - origin[cell]


def run():
    origin = wp.array(np.array([0.0, 1.0, 2.0], dtype=np.float32), dtype=float, device="cpu")
    x = wp.array(np.array([0.5, 2.25, -0.5], dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros(3, dtype=float, device="cpu")
    wp.launch(bin_particles, dim=3, inputs=[origin, x, out], device="cpu")
    return out.numpy()
"""

GOOD = """
import numpy as np
import warp as wp

NULL_ELEMENT_INDEX = wp.constant(-1)


@wp.func
def cell_lookup(cell_size: float, res: int, x: float) -> int:
    i = int(wp.floor(x / cell_size))
    if i < 0 or i >= res:
        return NULL_ELEMENT_INDEX
    return i


@wp.func
def clamped_cell(cell_size: float, res: int, x: float) -> int:
    return wp.clamp(int(wp.floor(x / cell_size)), 0, res - 1)


@wp.kernel
def bin_particles(origin: wp.array(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float),
                  nearest: wp.array(dtype=float)):
    p = wp.tid()
    cell = cell_lookup(1.0, origin.shape[0], x[p])
    if cell == NULL_ELEMENT_INDEX:
        out[p] = 0.0
    else:
        out[p] = x[p] - origin[cell]
    near = clamped_cell(1.0, origin.shape[0], x[p])
    nearest[p] = origin[near]


def run():
    origin = wp.array(np.array([0.0, 1.0, 2.0], dtype=np.float32), dtype=float, device="cpu")
    x = wp.array(np.array([0.5, 2.25, -0.5], dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros(3, dtype=float, device="cpu")
    nearest = wp.zeros(3, dtype=float, device="cpu")
    wp.launch(bin_particles, dim=3, inputs=[origin, x, out, nearest], device="cpu")
    return out.numpy()
"""


def test_an_unchecked_sentinel_index_is_a_warning(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH061"])
    assert record.severity is Severity.WARNING
    assert (record.location.line, record.location.col) == (20, 20)
    assert "`cell_lookup`" in record.message and "`NULL_ELEMENT_INDEX`" in record.message
    assert record.related[0].location.line == 12


def test_a_checked_sentinel_and_a_function_without_one_are_fine(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH061"]) == []
    assert warp_error(GOOD) is None


@pytest.mark.slow
def test_warp_reads_the_last_element_for_the_sentinel() -> None:
    assert warp_error(BAD) is None
    # the particle at -0.5 left the grid: it is measured from the last cell (2.0), not flagged
    assert np.allclose(run_source(BAD), [0.5, 0.25, -2.5])
    assert np.allclose(run_source(GOOD), [0.5, 0.25, 0.0])
