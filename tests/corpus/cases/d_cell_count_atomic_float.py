# corpus: expect=WH004,WH004 warp=rejects
"""Particle binning into a hash grid: counts accumulated with `wp.atomic_add(cell_count, c, 1.0)` into an
int32 array, and the cell's maximum density with an int literal into a float array. Warp: "atomic_add()
value argument type (float32) must be of the same type as the array (int32)"."""

import warp as wp


@wp.func
def cell_index(p: wp.vec3, inv_cell: float, dim: int) -> int:
    c = wp.vec3i(int(p[0] * inv_cell), int(p[1] * inv_cell), int(p[2] * inv_cell))
    cx = wp.clamp(c[0], 0, dim - 1)
    cy = wp.clamp(c[1], 0, dim - 1)
    cz = wp.clamp(c[2], 0, dim - 1)
    return (cz * dim + cy) * dim + cx


@wp.kernel
def bin_particles(
    x: wp.array(dtype=wp.vec3),
    inv_cell: float,
    dim: int,
    cell_count: wp.array(dtype=wp.int32),
    cell_max_density: wp.array(dtype=float),
    particle_cell: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    c = cell_index(x[i], inv_cell, dim)
    particle_cell[i] = c
    wp.atomic_add(cell_count, c, 1.0)
    wp.atomic_max(cell_max_density, c, 1)
