"""WH050: an array shared by all worlds (one entry along an axis) read at the raw world id. Motivated by
mujoco_warp's unbatched model fields (google-deepmind/mujoco_warp#807, #821, #932, #1185)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bounds_trap import run_in_debug_mode
from checker_helpers import Analyse

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

# the kernel computes the batched index, then reads with the raw world id (mujoco_warp#807)
KERNEL_SAYS = """
import numpy as np
import warp as wp


@wp.kernel
def transmission(gear: wp.array2d(dtype=float), qpos: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    gear_id = worldid % gear.shape[0]
    out[worldid, actid] = gear[worldid, actid] * qpos[worldid, actid]


def run():
    nworld, nu = {nworld}, 2
    gear = wp.array(np.array([[2.0, -1.0]], dtype=np.float32), dtype=float, device="cpu")
    qpos = wp.array(np.arange(2 * nworld, dtype=np.float32).reshape(nworld, 2), dtype=float, device="cpu")
    out = wp.zeros((nworld, nu), dtype=float, device="cpu")
    wp.launch(transmission, dim=(nworld, nu), inputs=[gear, qpos, out], device="cpu")
    return out.numpy()
"""

# the launch passes a one-entry array (mujoco_warp#821); the kernel has no batched index
LAUNCH_SAYS = """
import numpy as np
import warp as wp


@wp.kernel
def cacc_world(gravity: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    worldid = wp.tid()
    out[worldid] = -gravity[worldid]


def run():
    nworld = 4
    gravity = wp.array(np.array([[0.0, 0.0, -9.81]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    out = wp.zeros(nworld, dtype=wp.vec3, device="cpu")
    wp.launch(cacc_world, dim=nworld, inputs=[gravity, out], device="cpu")
    return out.numpy()
"""

QUIET = """
import warp as wp


@wp.kernel
def batched(gear: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    out[worldid, actid] = gear[worldid % gear.shape[0], actid]


@wp.kernel
def per_world(gear: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    out[worldid, actid] = gear[worldid, actid]


@wp.kernel
def guarded(gear: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    gear_id = worldid % gear.shape[0]
    if gear.shape[0] == 1:
        out[worldid, actid] = gear[gear_id, actid]
    else:
        out[worldid, actid] = gear[worldid, actid]


def run(nworld, nu):
    shared = wp.zeros((1, nu), dtype=float)
    own = wp.zeros((nworld, nu), dtype=float)
    out = wp.zeros((nworld, nu), dtype=float)
    wp.launch(batched, dim=(nworld, nu), inputs=[shared, out])
    wp.launch(per_world, dim=(nworld, nu), inputs=[own, out])
    wp.launch(per_world, dim=(1, nu), inputs=[shared, out])
    wp.launch(guarded, dim=(nworld, nu), inputs=[shared, out])
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_the_kernels_own_batched_index_is_evidence_and_the_fix_uses_it(analyse: Analyse) -> None:
    source = KERNEL_SAYS.format(nworld=3)
    (record,) = analyse(source, select=["WH050"])
    assert record.location.line == _line(source, "gear[worldid, actid] *")
    assert record.severity is Severity.ERROR  # the launch shows one entry against 3 worlds
    assert "worldid % gear.shape[0]" in record.message or "one entry along axis 0" in record.message
    assert record.fix is not None and record.fix.safe
    fixed, applied = apply_fixes(source, [record])
    assert applied == 1 and "gear[gear_id, actid] * qpos" in fixed
    assert analyse(fixed, select=["WH050"]) == []


def test_without_a_launch_the_batched_index_alone_is_a_warning(analyse: Analyse) -> None:
    source = KERNEL_SAYS.format(nworld=3).split("def run")[0]
    (record,) = analyse(source, select=["WH050"])
    assert record.severity is Severity.WARNING and "computes `worldid % gear.shape[0]`" in record.message


def test_a_one_entry_array_at_the_launch_is_an_error_and_the_fix_reduces_the_index(analyse: Analyse) -> None:
    (record,) = analyse(LAUNCH_SAYS, select=["WH050"])
    assert record.severity is Severity.ERROR and "runs 4 values of `worldid`" in record.message
    assert [r.location.line for r in record.related] == [_line(LAUNCH_SAYS, "wp.launch(")]
    fixed, applied = apply_fixes(LAUNCH_SAYS, [record])
    assert applied == 1 and "-gravity[worldid % gravity.shape[0]]" in fixed
    assert analyse(fixed, select=["WH050"]) == []


def test_a_world_count_the_checker_cannot_fold_is_a_warning(analyse: Analyse) -> None:
    source = LAUNCH_SAYS.replace("def run():\n    nworld = 4\n", "def run(nworld: int):\n")
    (record,) = analyse(source, select=["WH050"])
    assert record.severity is Severity.WARNING


def test_batched_reads_per_world_arrays_one_world_and_guards_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH050"]) == []


@pytest.mark.slow
def test_debug_mode_traps_each_bad_read_and_runs_each_fix_right(analyse: Analyse, tmp_path: Path) -> None:
    bad_kernel = KERNEL_SAYS.format(nworld=3)
    fixes = [apply_fixes(src, analyse(src, select=["WH050"]))[0] for src in (bad_kernel, LAUNCH_SAYS)]
    runs = run_in_debug_mode(tmp_path, [bad_kernel, LAUNCH_SAYS, *fixes])
    assert runs[0].trapped and runs[1].trapped, [r.output[-1500:] for r in runs[:2]]
    qpos = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(runs[2].result, qpos * np.array([2.0, -1.0]))  # type: ignore[arg-type]
    np.testing.assert_allclose(runs[3].result, np.tile([0.0, 0.0, 9.81], (4, 1)), rtol=1e-6)  # type: ignore[arg-type]
