# corpus: expect=WH025,WH025 warp=silent
"""Samples a sphere SDF on a regular grid that spans the bounding box. The normalised coordinates divide
two ints with `/`, which Warp truncates, so every sample but the last row/column collapses onto the
box's lower corner."""

import warp as wp


@wp.struct
class GridSpec:
    lower: wp.vec3
    upper: wp.vec3
    nx: int
    ny: int
    nz: int


@wp.func
def sphere_sdf(p: wp.vec3, center: wp.vec3, radius: float) -> float:
    return wp.length(p - center) - radius


@wp.kernel
def sample_sdf(grid: GridSpec, center: wp.vec3, radius: float, sdf: wp.array3d(dtype=float)):
    i, j, k = wp.tid()
    tx = float(i / (grid.nx - 1))
    ty = float(j / (grid.ny - 1))
    tz = float(k) / float(grid.nz - 1)
    extent = grid.upper - grid.lower
    p = grid.lower + wp.vec3(tx * extent[0], ty * extent[1], tz * extent[2])
    sdf[i, j, k] = sphere_sdf(p, center, radius)


def build_sdf(grid: GridSpec, center: wp.vec3, radius: float, device: str = "cpu") -> wp.array:
    sdf = wp.zeros((grid.nx, grid.ny, grid.nz), dtype=float, device=device)
    wp.launch(sample_sdf, dim=(grid.nx, grid.ny, grid.nz), inputs=[grid, center, radius, sdf], device=device)
    return sdf
