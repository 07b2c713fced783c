# corpus: expect= warp=ok
"""The same SPH density summation over whole blocks, with the guard the rounding needs (`if i >= n:
return`), and a pressure pass launched over exactly the particle count."""

import numpy as np
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
def compute_density(x: wp.array(dtype=wp.vec3), mass: float, h: float, n: int, rho: wp.array(dtype=float)):
    i = wp.tid()
    if i >= n:
        return
    xi = x[i]
    acc = wp.float32(0.0)
    for j in range(n):
        d = x[j] - xi
        acc += mass * poly6(wp.dot(d, d), h)
    rho[i] = acc


@wp.kernel
def equation_of_state(rho: wp.array(dtype=float), rho0: float, k: float, p: wp.array(dtype=float)):
    i = wp.tid()
    p[i] = k * (rho[i] - rho0)


class SphFluid:
    def __init__(self, positions: np.ndarray, h: float):
        self.count = len(positions)
        self.h = h
        self.x = wp.array(positions, dtype=wp.vec3, device="cpu")
        self.rho = wp.zeros(self.count, dtype=float, device="cpu")
        self.p = wp.zeros_like(self.rho)

    def step(self, mass: float):
        blocks = (self.count + BLOCK - 1) // BLOCK
        wp.launch(
            compute_density,
            dim=blocks * BLOCK,
            inputs=[self.x, mass, self.h, self.count, self.rho],
            device="cpu",
        )
        wp.launch(equation_of_state, dim=self.count, inputs=[self.rho, 1000.0, 3.0, self.p], device="cpu")


def run():
    fluid = SphFluid(np.random.default_rng(1).random((200, 3), dtype=np.float32), 0.1)
    fluid.step(0.02)
