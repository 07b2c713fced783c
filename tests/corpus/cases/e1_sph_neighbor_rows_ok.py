# corpus: expect= warp=ok
"""SPH density over a fixed-size neighbour table: each particle's row of the 2-D table is taken as a
view and handed to a helper, positions come from NumPy already as float32 vec3 rows, and the block
count is an integer division."""

import numpy as np
import warp as wp

MAX_NEIGHBORS = wp.constant(8)


@wp.func
def poly6(r2: float, h: float) -> float:
    h2 = h * h
    if r2 >= h2:
        return 0.0
    d = h2 - r2
    return 315.0 / (64.0 * 3.14159265 * wp.pow(h, 9.0)) * d * d * d


@wp.func
def density_at(x: wp.array(dtype=wp.vec3), i: int, row: wp.array(dtype=int), count: int, h: float) -> float:
    rho = float(0.0)
    for k in range(count):
        j = row[k]
        r = x[i] - x[j]
        rho += poly6(wp.dot(r, r), h)
    return rho


@wp.kernel
def compute_density(
    x: wp.array(dtype=wp.vec3),
    neighbors: wp.array2d(dtype=int),
    counts: wp.array(dtype=int),
    h: float,
    mass: float,
    rho: wp.array(dtype=float),
):
    i = wp.tid()
    if i >= x.shape[0]:
        return
    row = neighbors[i]
    count = wp.min(counts[i], row.shape[0])
    rho[i] = mass * density_at(x, i, row, count, h)


class FluidBlock:
    def __init__(self, positions: np.ndarray, smoothing: float):
        self.count = len(positions)
        self.h = smoothing
        self.x = wp.array(positions, dtype=wp.vec3, device="cpu")
        self.neighbors = wp.zeros((self.count, MAX_NEIGHBORS), dtype=int, device="cpu")
        self.counts = wp.zeros(self.count, dtype=int, device="cpu")
        self.rho = wp.zeros(self.count, dtype=float, device="cpu")

    def densities(self, mass: float, block: int = 64):
        blocks = (self.count + block - 1) // block
        wp.launch(
            compute_density,
            dim=blocks * block,
            inputs=[self.x, self.neighbors, self.counts, self.h, mass],
            outputs=[self.rho],
            device="cpu",
        )


def run():
    positions = np.random.default_rng(2).random((100, 3)).astype(np.float32)
    FluidBlock(positions, 0.1).densities(0.01)
