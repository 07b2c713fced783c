# corpus: expect=WH007 warp=silent
"""A cloth grid whose 2-D relaxation kernel is launched with the flat vertex count `nx * ny`: a 1-D
launch, so `j` is always 0 and only the first column of the cloth is ever relaxed (no error)."""

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
    if i > 0:
        acc += spring_force(x[i, j], x[i - 1, j], rest, stiffness)
    if j + 1 < ny:
        acc += spring_force(x[i, j], x[i, j + 1], rest, stiffness)
    if j > 0:
        acc += spring_force(x[i, j], x[i, j - 1], rest, stiffness)
    f[i, j] = acc


class ClothGrid:
    def __init__(self, nx: int, ny: int, spacing: float):
        self.nx = nx
        self.ny = ny
        self.rest = spacing
        self.x = wp.zeros((nx, ny), dtype=wp.vec3)
        self.f = wp.zeros((nx, ny), dtype=wp.vec3)

    def compute_forces(self, stiffness: float):
        # one thread per vertex... but `nx * ny` is one integer: a 1-D launch
        wp.launch(
            relax_structural,
            dim=self.nx * self.ny,
            inputs=[self.x, self.f, self.rest, stiffness],
        )
