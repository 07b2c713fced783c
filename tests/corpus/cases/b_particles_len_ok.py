# corpus: expect= warp=ok
"""Particle integration over `len(positions)` threads, a scratch buffer made with `wp.empty_like`, and a
neighbour-difference pass over one thread fewer than the particles: every launch stays inside."""

import numpy as np
import warp as wp


@wp.kernel
def predict(
    x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), dt: float, x_pred: wp.array(dtype=wp.vec3)
):
    tid = wp.tid()
    x_pred[tid] = x[tid] + v[tid] * dt


@wp.kernel
def segment_lengths(x: wp.array(dtype=wp.vec3), lengths: wp.array(dtype=float)):
    tid = wp.tid()
    lengths[tid] = wp.length(x[tid + 1] - x[tid])


def step(positions, velocities, dt: float):
    predicted = wp.empty_like(positions)
    wp.launch(predict, dim=len(positions), inputs=[positions, velocities, dt, predicted], device="cpu")
    lengths = wp.zeros(positions.shape[0] - 1, dtype=float, device="cpu")
    wp.launch(segment_lengths, dim=positions.shape[0] - 1, inputs=[predicted, lengths], device="cpu")
    return predicted, lengths


def run():
    rng = np.random.default_rng(2)
    x = wp.array(rng.random((32, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
    v = wp.zeros_like(x)
    step(x, v, 0.01)
