# corpus: expect=WH010 warp=silent
"""Counting particles per cell of a uniform grid before a counting sort: the cell comes from the
particle's position (a binning), and the count is a plain `count[c] = count[c] + 1`. Many particles
share a cell, so on a GPU increments are lost and the sort's offsets are wrong."""

import warp as wp


@wp.struct
class Grid:
    origin: wp.vec3
    inv_cell_size: float
    dim_x: int
    dim_y: int
    dim_z: int


@wp.func
def clamp_cell(c: int, n: int) -> int:
    return wp.clamp(c, 0, n - 1)


@wp.kernel
def count_particles_per_cell(
    grid: Grid,
    positions: wp.array(dtype=wp.vec3),
    cell_count: wp.array(dtype=wp.int32),
):
    tid = wp.tid()
    local = (positions[tid] - grid.origin) * grid.inv_cell_size
    cx = clamp_cell(int(local[0]), grid.dim_x)
    cy = clamp_cell(int(local[1]), grid.dim_y)
    cz = clamp_cell(int(local[2]), grid.dim_z)
    cell = (cz * grid.dim_y + cy) * grid.dim_x + cx
    cell_count[cell] = cell_count[cell] + 1


def count_cells(grid: Grid, positions: wp.array, cell_count: wp.array):
    cell_count.zero_()
    wp.launch(count_particles_per_cell, dim=positions.shape[0], inputs=[grid, positions, cell_count])
