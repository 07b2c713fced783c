"""WH059: a tile offset that steps by the tile's extent along another axis."""

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

TILE_M = wp.constant(4)
TILE_K = wp.constant(2)


@wp.kernel
def copy(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, k = wp.tid()
    t = wp.tile_load(a, shape=(TILE_M, TILE_K), offset=(i * TILE_K, k * TILE_K))
    wp.tile_store(out, t, offset=(i * TILE_K, k * TILE_K))


def run():
    a = wp.array(np.arange(64, dtype=np.float32).reshape(8, 8), device="cpu")
    out = wp.zeros((8, 8), dtype=float, device="cpu")
    wp.launch_tiled(copy, dim=(2, 4), inputs=[a, out], block_dim=1, device="cpu")
    return out.numpy()
"""

# square tiles, offsets by their own extents (also with a base), literal extents, a tile of unknown shape
QUIET = """
import warp as wp

TILE = wp.constant(8)
TILE_M = wp.constant(4)
TILE_K = wp.constant(2)


@wp.kernel
def fine(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float), base: int):
    i, k = wp.tid()
    s = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, k * TILE))
    t = wp.tile_load(a, shape=(TILE_M, TILE_K), offset=(i * TILE_M + base, k * TILE_K))
    u = wp.tile_load(a, shape=(4, 2), offset=(i * 4, k * 2))
    v = wp.tile_map(wp.neg, t)
    wp.tile_store(out, v, offset=(i * TILE_K, k * TILE_K))
    wp.tile_store(out, s, offset=(i * TILE, k * TILE))
    wp.tile_store(out, u, offset=(i * 4, k * 2))
"""


def test_the_wrong_extent_is_a_warning_and_the_fix_steps_by_the_axis_own(analyse: Analyse) -> None:
    load, store = analyse(BAD, select=["WH059"])
    assert load.severity is Severity.WARNING and (load.location.line, store.location.line) == (12, 13)
    assert "steps by `TILE_K`, the tile's extent along axis 1" in load.message
    fixed, applied = apply_fixes(BAD, [load, store])
    assert applied == 2 and fixed.count("offset=(i * TILE_M, k * TILE_K)") == 2
    assert analyse(fixed, select=["WH059"]) == []
    assert warp_error(fixed) is None


def test_own_extents_square_tiles_and_unknown_shapes_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH059"]) == []


@pytest.mark.slow
def test_warp_leaves_rows_unwritten_and_the_fix_copies_everything(analyse: Analyse) -> None:
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    got = run_source(BAD)
    assert np.allclose(got[:6], a[:6]) and not got[6:].any()  # rows 6 and 7 never written
    fixed, _ = apply_fixes(BAD, analyse(BAD, select=["WH059"]))
    assert np.allclose(run_source(fixed), a)
