"""WH058: a read-modify-write of an element every thread along one launch axis updates."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse, rules_of
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def column_stats(x: wp.array2d(dtype=float), best: wp.array(dtype=float), total: wp.array(dtype=float)):
    i, j = wp.tid()
    if x[i, j] > best[j]:
        best[j] = x[i, j]
    total[j] = total[j] + x[i, j]


def run():
    n = {rows}
    x = wp.array(np.arange(n * 2, dtype=np.float32).reshape(n, 2), device="{device}")
    best = wp.zeros(2, dtype=float, device="{device}")
    total = wp.zeros(2, dtype=float, device="{device}")
    wp.launch(column_stats, dim=(n, 2), inputs=[x, best, total], device="{device}")
    return np.concatenate([best.numpy(), total.numpy()])
"""

# every thread index in the element, a condition on the dropped axis, an operand the same for every
# thread along it, an axis of one thread at every launch
QUIET = """
import warp as wp


@wp.kernel
def fine(x: wp.array2d(dtype=float), own: wp.array2d(dtype=float), acc: wp.array(dtype=float)):
    i, j = wp.tid()
    own[i, j] = own[i, j] + x[i, j]
    if i == 0:
        acc[j] = acc[j] + x[i, j]
    acc[j] = wp.max(acc[j], x[0, j])


@wp.kernel
def one_row(x: wp.array2d(dtype=float), acc: wp.array(dtype=float)):
    i, j = wp.tid()
    acc[j] = acc[j] + x[i, j]


def run(x, own, acc):
    wp.launch(one_row, dim=(1, 4), inputs=[x, acc])
"""


def _source(rows: int = 4, device: str = "cpu") -> str:
    return BAD.replace("{rows}", str(rows)).replace("{device}", device)


def test_the_running_maximum_and_sum_along_a_dropped_axis_are_warnings_with_atomic_fixes(
    analyse: Analyse,
) -> None:
    source = _source()
    records = analyse(source, select=["WH058", "WH010"])
    assert rules_of(records) == ["WH058", "WH058"]  # WH010 takes a thread index in the element as its own
    maximum, total = records
    assert maximum.severity is Severity.WARNING and maximum.location.line == 9
    assert "does not depend on the thread index `i`" in maximum.message
    assert total.location.line == 11
    fixed, applied = apply_fixes(source, records)
    assert applied == 2
    assert "    wp.atomic_max(best, j, x[i, j])\n" in fixed and "    total[j] += x[i, j]\n" in fixed
    assert analyse(fixed, select=["WH058"]) == []
    assert warp_error(fixed) is None


def test_own_elements_guarded_updates_and_single_thread_axes_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH058"]) == []


@pytest.mark.slow
def test_on_the_cpu_warp_runs_the_threads_in_turn_and_both_agree(analyse: Analyse) -> None:
    """The race needs a GPU: on the CPU the racy kernel and the atomic fix give the serial result."""
    source = _source()
    want = [6.0, 7.0, 12.0, 16.0]
    assert np.allclose(run_source(source), want)
    fixed, _ = apply_fixes(source, analyse(source, select=["WH058"]))
    assert np.allclose(run_source(fixed), want)


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_the_racy_updates_lose_and_the_fix_does_not(analyse: Analyse) -> None:
    import warp as wp

    if not wp.is_cuda_available():
        pytest.skip("no CUDA device")
    rows = 1 << 16
    source = _source(rows, "cuda:0")
    want = [2.0 * (rows - 1), 2.0 * (rows - 1) + 1.0, float(rows * (rows - 1)), float(rows * rows)]
    got = run_source(source)
    assert not np.allclose(got[2:], want[2:], rtol=1e-3)  # the sums lost updates
    fixed, _ = apply_fixes(source, analyse(source, select=["WH058"]))
    assert np.allclose(run_source(fixed), want, rtol=1e-3)


TILE_STORE = """
import warp as wp

NV = 4


@wp.kernel
def actuator_velocity(
    qvel_in: wp.array2d(dtype=float), moment_in: wp.array3d(dtype=float), out: wp.array2d(dtype=float)
):
    worldid, actid = wp.tid()
    moment = wp.tile_load(moment_in[worldid, actid], shape=NV)
    qvel = wp.tile_load(qvel_in[worldid], shape=NV)
    velocity = wp.tile_reduce(wp.add, wp.tile_map(wp.mul, moment, qvel))
    wp.tile_store(out[worldid], velocity{offset})


def run(qvel, moment, out):
    wp.launch_tiled(actuator_velocity, dim={dim}, inputs=[qvel, moment], outputs=[out], block_dim=8)
"""


def test_a_tile_every_block_of_an_axis_stores_at_the_same_place_is_a_warning(analyse: Analyse) -> None:
    """mujoco_warp e83d46e (tests/corpus/real_bugs/tile_geometry_store_without_offset shows Warp's result)."""
    bad = TILE_STORE.replace("{offset}", "").replace("{dim}", "(2, 3)")
    (record,) = analyse(bad, select=["WH058"])
    assert record.severity is Severity.WARNING and record.location.line == 15
    assert "computed from the thread index `actid`" in record.message
    placed = TILE_STORE.replace("{offset}", ", offset=(actid,)").replace("{dim}", "(2, 3)")
    assert analyse(placed, select=["WH058"]) == []
    # launched over worlds only: the second thread index is the block's lane, and the lanes store one tile
    lanes = TILE_STORE.replace("{offset}", "").replace("{dim}", "2")
    assert analyse(lanes, select=["WH058"]) == []
    assert warp_error(placed) is None


SKIP_FLAG = """
import warp as wp


@wp.kernel
def local_to_global(
    geom_pos: wp.array2d(dtype=float),
    skip_in: wp.array(dtype=bool),
    xpos_out: wp.array2d(dtype=float),
    skip_out: wp.array(dtype=bool),
):
    worldid, geomid = wp.tid()
    if not skip_in[geomid]:
        xpos_out[worldid, geomid] = geom_pos[worldid, geomid]
        skip_out[geomid] = True


def run(geom_pos, skip, xpos):
    wp.launch(local_to_global, dim=(2, 3), inputs=[geom_pos, skip], outputs=[xpos, {out}])
"""


def test_a_flag_every_world_reads_and_sets_is_a_warning_when_the_launch_aliases_it(analyse: Analyse) -> None:
    """mujoco_warp #809 (tests/corpus/real_bugs/race_shared_skip_flag_across_worlds shows Warp's result)."""
    (record,) = analyse(SKIP_FLAG.replace("{out}", "skip"), select=["WH058"])
    assert record.location.line == 15 and "`skip_in` and `skip_out` are one array" in record.message
    assert "thread index `worldid`" in record.message
    # two arrays: the flag read is not the one set
    assert analyse(SKIP_FLAG.replace("{out}", "other_skip"), select=["WH058"]) == []


RESET = """
import warp as wp


@wp.kernel
def clear_active(keys: wp.array(dtype=int), slots: wp.array(dtype=int), capacity: int, num_threads: int):
    tid = wp.tid()
    count = slots[capacity]
    i = tid
    while i < count:
        keys[slots[i]] = 0
        i += num_threads
    if tid == 0:
        slots[capacity] = 0


def run(keys, slots):
    wp.launch(clear_active, dim={dim}, inputs=[keys, slots, 8, 4])
"""


def test_one_thread_resetting_what_every_thread_reads_is_a_warning(analyse: Analyse) -> None:
    """newton #2477 (tests/corpus/real_bugs/race_thread_zero_resets_shared_count shows Warp's result)."""
    (record,) = analyse(RESET.replace("{dim}", "4"), select=["WH058"])
    assert (
        record.location.line == 14 and "runs in one thread" in record.message and "(line 8)" in record.message
    )
    assert analyse(RESET.replace("{dim}", "1"), select=["WH058"]) == []  # one thread: nobody reads late
