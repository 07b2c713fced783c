# corpus: expect=WH007 warp=silent
"""A box blur written with one thread per row, launched with the image's 2-D shape: Warp folds the
column dimension away, so every row is blurred `width` times by `width` threads at once."""

import warp as wp


@wp.func
def clamp_index(k: int, n: int) -> int:
    return wp.clamp(k, 0, n - 1)


@wp.kernel
def blur_rows(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float), radius: int):
    row = wp.tid()
    width = src.shape[1]
    for col in range(width):
        acc = wp.float32(0.0)
        for k in range(-radius, radius + 1):
            acc += src[row, clamp_index(col + k, width)]
        dst[row, col] = acc / float(2 * radius + 1)


def blur(src: wp.array2d(dtype=float), radius: int) -> wp.array2d(dtype=float):
    dst = wp.empty_like(src)
    wp.launch(blur_rows, dim=src.shape, inputs=[src, dst, radius])
    return dst
