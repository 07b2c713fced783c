# corpus: expect= warp=ok
"""A box blur with one thread per pixel over the image's shape, and a per-row pass launched over the
first extent only (`img.shape[:1]`, `img.shape[0]`): the ranks match."""

import numpy as np
import warp as wp


@wp.func
def clamp_index(k: int, n: int) -> int:
    return wp.clamp(k, 0, n - 1)


@wp.kernel
def blur_pixels(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float), radius: int):
    row, col = wp.tid()
    width = src.shape[1]
    acc = wp.float32(0.0)
    for k in range(-radius, radius + 1):
        acc += src[row, clamp_index(col + k, width)]
    dst[row, col] = acc / float(2 * radius + 1)


@wp.kernel
def row_sums(src: wp.array2d(dtype=float), sums: wp.array(dtype=float)):
    row = wp.tid()
    acc = wp.float32(0.0)
    for col in range(src.shape[1]):
        acc += src[row, col]
    sums[row] = acc


def blur(src, radius: int):
    dst = wp.empty_like(src)
    wp.launch(blur_pixels, dim=src.shape, inputs=[src, dst, radius], device="cpu")
    sums = wp.zeros(src.shape[0], dtype=float, device="cpu")
    wp.launch(row_sums, dim=src.shape[:1], inputs=[dst, sums], device="cpu")
    wp.launch(row_sums, dim=src.shape[0], inputs=[src, sums], device="cpu")
    return dst, sums


def run():
    img = wp.array(np.random.default_rng(0).random((6, 8), dtype=np.float32), device="cpu")
    blur(img, 1)
