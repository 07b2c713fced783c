# corpus: expect=WH011,WH011 warp=silent
"""SPH density summation launched over whole blocks of 128 threads (`blocks * 128`) with no guard in
the kernel: unless the particle count is a multiple of 128, the last threads read positions past the
end and write densities past the end (heap corruption on the CPU, other buffers on a GPU)."""

import warp as wp

BLOCK = 128


@wp.func
def poly6(r2: float, h: float) -> float:
    h2 = h * h
    if r2 >= h2:
        return 0.0
    d = h2 - r2
    return 315.0 / (64.0 * 3.14159265 * wp.pow(h, 9.0)) * d * d * d


@wp.kernel
def compute_density(
    x: wp.array(dtype=wp.vec3),
    mass: float,
    h: float,
    rho: wp.array(dtype=float),
):
    i = wp.tid()
    xi = x[i]
    acc = wp.float32(0.0)
    for j in range(x.shape[0]):
        d = x[j] - xi
        acc += mass * poly6(wp.dot(d, d), h)
    rho[i] = acc


class SphFluid:
    def __init__(self, count: int, h: float):
        self.count = count
        self.h = h
        self.x = wp.zeros(count, dtype=wp.vec3)
        self.rho = wp.zeros(count, dtype=float)

    def densities(self, mass: float):
        blocks = (self.count + BLOCK - 1) // BLOCK
        wp.launch(compute_density, dim=blocks * BLOCK, inputs=[self.x, mass, self.h, self.rho])
