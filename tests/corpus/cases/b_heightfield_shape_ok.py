# corpus: expect= warp=ok
"""A heightfield erosion step: a 2-D kernel over the field's shape (unpacked as `nx, ny`), a flat
kernel over `nx * ny`, and an interior stencil over `(nx - 2, ny - 2)`: every rank and extent fits."""

import numpy as np
import warp as wp


@wp.kernel
def laplacian(h: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    ci = i + 1
    cj = j + 1
    out[ci, cj] = h[ci - 1, cj] + h[ci + 1, cj] + h[ci, cj - 1] + h[ci, cj + 1] - 4.0 * h[ci, cj]


@wp.kernel
def erode(h: wp.array2d(dtype=float), lap: wp.array2d(dtype=float), rate: float):
    i, j = wp.tid()
    h[i, j] = h[i, j] + rate * lap[i, j]


@wp.kernel
def clamp_flat(h: wp.array2d(dtype=float), floor: float):
    tid = wp.tid()
    i = tid // h.shape[1]
    j = tid % h.shape[1]
    h[i, j] = wp.max(h[i, j], floor)


def erosion_step(h, rate: float):
    nx, ny = h.shape
    lap = wp.zeros_like(h)
    wp.launch(laplacian, dim=(nx - 2, ny - 2), inputs=[h, lap], device="cpu")
    wp.launch(erode, dim=h.shape, inputs=[h, lap, rate], device="cpu")
    wp.launch(clamp_flat, dim=nx * ny, inputs=[h, 0.0], device="cpu")


def run():
    h = wp.array(np.random.default_rng(3).random((9, 7), dtype=np.float32), device="cpu")
    erosion_step(h, 0.1)
