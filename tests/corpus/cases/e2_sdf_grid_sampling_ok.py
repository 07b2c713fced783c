# corpus: expect= warp=ok
"""The same SDF sampling done right (float division), and a flattened variant that splits the linear
index into row and column with `/` and `%` on purpose."""

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
    t = wp.vec3(float(i) / float(grid.nx - 1), float(j) / float(grid.ny - 1), float(k) / float(grid.nz - 1))
    p = grid.lower + wp.cw_mul(t, grid.upper - grid.lower)
    sdf[i, j, k] = sphere_sdf(p, center, radius)


@wp.kernel
def sample_slice(grid: GridSpec, center: wp.vec3, radius: float, z: float, sdf: wp.array(dtype=float)):
    tid = wp.tid()
    row = tid / grid.nx
    col = tid % grid.nx
    cell = (grid.upper - grid.lower) / float(grid.nx)
    p = grid.lower + wp.vec3((float(col) + 0.5) * cell[0], (float(row) + 0.5) * cell[1], z)
    sdf[tid] = sphere_sdf(p, center, radius)


def build_sdf(grid: GridSpec, center: wp.vec3, radius: float, device: str = "cpu") -> wp.array:
    sdf = wp.zeros((grid.nx, grid.ny, grid.nz), dtype=float, device=device)
    wp.launch(sample_sdf, dim=(grid.nx, grid.ny, grid.nz), inputs=[grid, center, radius, sdf], device=device)
    return sdf
