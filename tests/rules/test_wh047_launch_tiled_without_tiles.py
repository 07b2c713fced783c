"""WH047: `wp.launch_tiled` of a kernel with no tile operation."""

from __future__ import annotations

from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

SOURCE = """
import warp as wp


@wp.kernel
def velocity(qvel: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    out[worldid, actid] = 2.0 * qvel[worldid, actid]


@wp.func
def load_row(a: wp.array2d(dtype=float), i: int):
    return wp.tile_load(a[i], shape=8)


@wp.kernel
def row_sum(a: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    t = load_row(a, i)
    wp.tile_store(out, wp.tile_sum(t), offset=i)


@wp.kernel
def per_lane(a: wp.array(dtype=float)):
    i, lane = wp.tid()
    if lane == 0:
        a[i] = 1.0


def run(nworld: int, nu: int):
    qvel = wp.zeros((nworld, nu), dtype=float)
    out = wp.zeros((nworld, nu), dtype=float)
    wp.launch_tiled(velocity, dim=(nworld, nu), inputs=[qvel, out], block_dim=32)
    wp.launch_tiled(row_sum, dim=nworld, inputs=[qvel, out[0]], block_dim=32)
    wp.launch_tiled(per_lane, dim=nworld, inputs=[out[0]], block_dim=32)
    wp.launch(velocity, dim=(nworld, nu), inputs=[qvel, out])
"""


def test_only_the_kernel_without_tiles_is_reported(analyse: Analyse) -> None:
    (record,) = analyse(SOURCE, select=["WH047"])
    line = next(n for n, text in enumerate(SOURCE.splitlines(), 1) if "launch_tiled(velocity" in text)
    assert record.location.line == line and "`velocity`, which uses no tile operation" in record.message
    fixed, applied = apply_fixes(SOURCE, [record], safe_only=False)
    assert applied == 1
    assert "    wp.launch(velocity, dim=(nworld, nu), inputs=[qvel, out], block_dim=32)" in fixed
    assert analyse(fixed, select=["WH047"]) == []
    assert warp_error(SOURCE) is None and warp_error(fixed) is None


def test_kernels_calling_functions_the_checker_cannot_see_are_left_alone(analyse: Analyse) -> None:
    source = """
import warp as wp
from elsewhere import helper


@wp.kernel
def k(a: wp.array(dtype=float)):
    i = wp.tid()
    helper(a, i)


def run(n: int):
    wp.launch_tiled(k, dim=n, inputs=[wp.zeros(n)], block_dim=32)
"""
    assert analyse(source, select=["WH047"]) == []
