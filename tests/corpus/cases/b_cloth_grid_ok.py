# corpus: expect= warp=ok
"""The same cloth relaxation, launched over the grid's own shape, and a flat integration kernel that
recovers (i, j) from a 1-D index: both ranks match their `wp.tid()`."""

import warp as wp


@wp.func
def spring_force(xa: wp.vec3, xb: wp.vec3, rest: float, stiffness: float) -> wp.vec3:
    d = xb - xa
    length = wp.length(d)
    if length < 1.0e-6:
        return wp.vec3(0.0)
    return d * (stiffness * (length - rest) / length)


@wp.kernel
def relax_structural(
    x: wp.array2d(dtype=wp.vec3),
    f: wp.array2d(dtype=wp.vec3),
    rest: float,
    stiffness: float,
):
    i, j = wp.tid()
    nx = x.shape[0]
    ny = x.shape[1]
    acc = wp.vec3(0.0)
    if i + 1 < nx:
        acc += spring_force(x[i, j], x[i + 1, j], rest, stiffness)
    if j + 1 < ny:
        acc += spring_force(x[i, j], x[i, j + 1], rest, stiffness)
    f[i, j] = acc


@wp.kernel
def integrate_flat(
    x: wp.array2d(dtype=wp.vec3), v: wp.array2d(dtype=wp.vec3), f: wp.array2d(dtype=wp.vec3), dt: float
):
    tid = wp.tid()
    ny = x.shape[1]
    i = tid // ny
    j = tid % ny
    v[i, j] = v[i, j] + f[i, j] * dt
    x[i, j] = x[i, j] + v[i, j] * dt


class ClothGrid:
    def __init__(self, nx: int, ny: int, spacing: float):
        self.nx = nx
        self.ny = ny
        self.rest = spacing
        self.x = wp.zeros((nx, ny), dtype=wp.vec3, device="cpu")
        self.v = wp.zeros((nx, ny), dtype=wp.vec3, device="cpu")
        self.f = wp.zeros((nx, ny), dtype=wp.vec3, device="cpu")

    def step(self, stiffness: float, dt: float):
        wp.launch(
            relax_structural, dim=self.x.shape, inputs=[self.x, self.f, self.rest, stiffness], device="cpu"
        )
        wp.launch(integrate_flat, dim=self.nx * self.ny, inputs=[self.x, self.v, self.f, dt], device="cpu")


def run():
    cloth = ClothGrid(4, 5, 0.1)
    cloth.step(100.0, 0.01)
