"""WH055: a per-world index into an array whose family the kernel indexes by the flat world index
(newton #2332, tests/corpus/real_bugs/index_space_warp_to_mj_coords)."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def com(
    joints_per_world: int,
    joint_child: wp.array(dtype=int),
    joint_q_start: wp.array(dtype=int),
    body_com: wp.array(dtype=float),
    out: wp.array2d(dtype=float),
):
    worldid, jntid = wp.tid()
    q_start = joint_q_start[joints_per_world * worldid + jntid]
    child = joint_child[jntid]
    out[worldid, jntid] = body_com[child] + float(q_start)


def run():
    # two worlds of one joint each; world 1's joint moves body 1, whose centre of mass is 10
    child = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    q_start = wp.array(np.array([0, 0], dtype=np.int32), dtype=int, device="cpu")
    body_com = wp.array(np.array([1.0, 10.0], dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros((2, 1), dtype=float, device="cpu")
    wp.launch(com, dim=(2, 1), inputs=[1, child, q_start, body_com, out], device="cpu")
    return out.numpy()
"""

# values compared (replicated per world), offsets added back, per-world maps of another family
QUIET = """
import warp as wp


@wp.kernel
def sync(
    joints_per_world: int,
    bodies_per_world: int,
    joint_type: wp.array(dtype=int),
    joint_child: wp.array(dtype=int),
    joint_q_start: wp.array(dtype=int),
    to_mjc_body: wp.array(dtype=int),
    body_q: wp.array(dtype=float),
    out: wp.array2d(dtype=float),
):
    worldid, jntid = wp.tid()
    if joint_type[jntid] != 1:
        return
    wq = joint_q_start[joints_per_world * worldid + jntid]
    child = joint_child[jntid]
    out[worldid, to_mjc_body[jntid]] = body_q[worldid * bodies_per_world + child] + float(wq)
"""


def test_a_per_world_index_into_the_flat_family_is_a_warning_with_the_flat_index_as_fix(
    analyse: Analyse,
) -> None:
    (record,) = analyse(BAD, select=["WH055"])
    assert record.severity is Severity.WARNING and record.location.line == 16
    assert "`joint_child` is indexed by the per-world index `jntid`" in record.message
    assert "body_com[child]" in record.message
    fixed, applied = apply_fixes(BAD, [record])
    assert applied == 1 and "child = joint_child[(joints_per_world * worldid + jntid)]" in fixed
    assert analyse(fixed, select=["WH055"]) == []
    assert warp_error(fixed) is None


def test_replicated_values_offsets_and_other_families_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH055"]) == []


@pytest.mark.slow
def test_warp_reads_world_zeros_body_and_the_fix_reads_its_own(analyse: Analyse) -> None:
    assert np.allclose(run_source(BAD), [[1.0], [1.0]])  # world 1 got world 0's body
    fixed, _ = apply_fixes(BAD, analyse(BAD, select=["WH055"]))
    assert np.allclose(run_source(fixed), [[1.0], [10.0]])
