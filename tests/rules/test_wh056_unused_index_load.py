"""WH056: an index loaded and never used while its source index reaches an array of another family
(newton #1557, mujoco_warp #825; tests/corpus/real_bugs/index_space_restitution, _hfield_geom_vs_dataid)."""

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
def restitution(
    contact_particle: wp.array(dtype=int),
    contact_normal: wp.array(dtype=wp.vec3),
    particle_v_out: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    particle_index = contact_particle[tid]
    wp.atomic_add(particle_v_out, tid, contact_normal[tid])


def run():
    contact_particle = wp.array(np.array([2], dtype=np.int32), dtype=int, device="cpu")
    normal = wp.array(np.array([[0.0, 1.0, 0.0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    v = wp.zeros(3, dtype=wp.vec3, device="cpu")
    wp.launch(restitution, dim=1, inputs=[contact_particle, normal, v], device="cpu")
    return v.numpy()
"""

# the loaded index is used; a dead load whose source only reaches its own family; a source index that changes
QUIET = """
import warp as wp


@wp.kernel
def fine(
    contact_particle: wp.array(dtype=int),
    contact_normal: wp.array(dtype=wp.vec3),
    contact_body: wp.array(dtype=int),
    shape_body: wp.array(dtype=int),
    particle_v_out: wp.array(dtype=wp.vec3),
    body_f: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    p = contact_particle[tid]
    wp.atomic_add(particle_v_out, p, contact_normal[tid])
    unused = contact_body[tid]
    n = contact_normal[tid]
    s = tid
    for k in range(2):
        s = s + k
    other = shape_body[s]
    body_f[s] = n
"""

# the loaded index is used only in a branch Warp may drop: used all the same
STATIC_USE = """
import os

import warp as wp

FUSED = os.environ.get("FUSED") == "1"  # unknown to the checker


@wp.kernel
def fused(contact_body: wp.array(dtype=int), contact_normal: wp.array(dtype=wp.vec3),
          body_f: wp.array(dtype=wp.vec3), shape_f: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    q = contact_body[tid]
    if wp.static(FUSED):
        body_f[q] = contact_normal[tid]
    shape_f[tid] = contact_normal[tid]
"""


def test_the_unused_load_is_the_index_meant_and_the_fix_uses_it(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH056"])
    assert record.severity is Severity.WARNING and record.location.line == 14
    assert "`particle_index = contact_particle[tid]` is loaded and never used" in record.message
    fixed, applied = apply_fixes(BAD, [record])
    assert applied == 1 and "wp.atomic_add(particle_v_out, particle_index, contact_normal[tid])" in fixed
    assert analyse(fixed, select=["WH056"]) == []
    assert warp_error(fixed) is None


def test_used_loads_own_family_and_changing_indices_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH056"]) == []
    assert analyse(STATIC_USE, select=["WH056"]) == []


@pytest.mark.slow
def test_warp_moves_the_contacts_row_and_the_fix_the_particle(analyse: Analyse) -> None:
    assert np.allclose(run_source(BAD), [[0, 1, 0], [0, 0, 0], [0, 0, 0]])
    fixed, _ = apply_fixes(BAD, analyse(BAD, select=["WH056"]))
    assert np.allclose(run_source(fixed), [[0, 0, 0], [0, 0, 0], [0, 1, 0]])
