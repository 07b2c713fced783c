# corpus: expect= warp=ok
"""A speed histogram and a CFL step done right: `wp.atomic_add` into the bins, `+=` through a binned
index, and `wp.atomic_min` for the step; looks like the racy versions but every update is atomic."""

import numpy as np
import warp as wp

NUM_BINS = wp.constant(16)


@wp.func
def speed_bin(speed: float, max_speed: float) -> int:
    return wp.clamp(int(speed / max_speed * float(NUM_BINS)), 0, NUM_BINS - 1)


@wp.kernel
def speed_statistics(
    velocities: wp.array(dtype=wp.vec3),
    max_speed: float,
    cell_size: float,
    histogram: wp.array(dtype=wp.int32),
    weighted: wp.array(dtype=float),
    dt: wp.array(dtype=float),
):
    i = wp.tid()
    speed = wp.length(velocities[i])
    b = speed_bin(speed, max_speed)
    wp.atomic_add(histogram, b, 1)
    weighted[int(speed / max_speed * 15.0)] += speed
    if speed > 1.0e-6:
        wp.atomic_min(dt, 0, 0.5 * cell_size / speed)


def run():
    rng = np.random.default_rng(1)
    v = wp.array(rng.random((256, 3)).astype(np.float32) * 0.5, dtype=wp.vec3, device="cpu")
    histogram = wp.zeros(NUM_BINS, dtype=wp.int32, device="cpu")
    weighted = wp.zeros(NUM_BINS, dtype=float, device="cpu")
    dt = wp.array([1.0], dtype=float, device="cpu")
    wp.launch(speed_statistics, dim=256, inputs=[v, 1.0, 0.1, histogram, weighted, dt], device="cpu")
