"""WH057: an index adds the same loaded offset twice (mujoco_warp #1019,
tests/corpus/real_bugs/index_space_flex_vert_double_offset)."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def bodies(
    vertadr: wp.array(dtype=int),
    edge: wp.array(dtype=wp.vec2i),
    vert_body: wp.array(dtype=int),
    out: wp.array(dtype=int),
):
    e = wp.tid()
    v = wp.vec2i(vertadr[1] + edge[e][0], vertadr[1] + edge[e][1])
    out[e] = vert_body[vertadr[1] + v[0]]


def run():
    # two objects of 2 vertices each; the edge of object 1 joins its local vertices 0 and 1
    vertadr = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    edge = wp.array(np.array([[0, 1]], dtype=np.int32), dtype=wp.vec2i, device="cpu")
    vert_body = wp.array(np.array([5, 6, 7, 8, 9, 10], dtype=np.int32), dtype=int, device="cpu")
    out = wp.zeros(1, dtype=int, device="cpu")
    wp.launch(bodies, dim=1, inputs=[vertadr, edge, vert_body, out], device="cpu")
    return out.numpy()
"""

GOOD = BAD.replace("vert_body[vertadr[1] + v[0]]", "vert_body[v[0]]")

# an offset added once, added and taken back, two different offsets
QUIET = """
import warp as wp


@wp.kernel
def fine(adr: wp.array(dtype=int), other: wp.array(dtype=int), x: wp.array(dtype=int)):
    i = wp.tid()
    g = adr[i] + i
    x[g] = 1
    x[g - adr[i] + adr[i]] = 2
    x[adr[i] + other[i] + i] = 3
    h = g - adr[i]
    x[adr[i] + h] = 4
"""


def test_the_offset_added_again_is_a_warning(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH057"])
    assert record.severity is Severity.WARNING and record.location.line == 15
    assert "adds `vertadr[1]` twice" in record.message
    assert analyse(GOOD, select=["WH057"]) == []
    assert warp_error(GOOD) is None


def test_offsets_added_once_or_taken_back_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH057"]) == []


@pytest.mark.slow
def test_warp_reads_another_objects_vertex() -> None:
    assert run_source(BAD).tolist() == [9]  # vertex 4: past object 1's vertices 2 and 3
    assert run_source(GOOD).tolist() == [7]
