# corpus: expect=WH026 warp=silent
"""Neighbour query over a hashed cell list: `cell_start` holds `num_cells + 1` prefix offsets. The
cell hash is int32 (a 2**31-sized literal is truncated to int32 by Warp), so the bucket is negative for
half the cells and `cell_start[bucket + 1]` reads the offsets of another cell than `cell_start[bucket]`."""

import warp as wp

HASH_A = 2654435761


@wp.func
def cell_index(p: wp.vec3, inv_cell: float) -> wp.vec3i:
    return wp.vec3i(int(p[0] * inv_cell), int(p[1] * inv_cell), int(p[2] * inv_cell))


@wp.kernel
def count_neighbor_candidates(
    positions: wp.array(dtype=wp.vec3),
    cell_start: wp.array(dtype=int),
    inv_cell: float,
    num_cells: int,
    candidates: wp.array(dtype=int),
):
    tid = wp.tid()
    c = cell_index(positions[tid], inv_cell)
    h = c[0] * HASH_A + c[1] * 40503 + c[2]
    bucket = h % num_cells
    candidates[tid] = cell_start[bucket + 1] - cell_start[bucket]


def query(positions: wp.array, cell_start: wp.array, inv_cell: float, candidates: wp.array):
    num_cells = cell_start.shape[0] - 1
    wp.launch(
        count_neighbor_candidates,
        dim=positions.shape[0],
        inputs=[positions, cell_start, inv_cell, num_cells, candidates],
        device=positions.device,
    )
