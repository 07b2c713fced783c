# corpus: expect= warp=ok
"""A separable box filter over a grayscale image: the image is float32 before it reaches the kernel,
the launch dims are integer tuples, every access indexes both axes."""

import numpy as np
import warp as wp

RADIUS = wp.constant(2)


@wp.kernel
def box_rows(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float)):
    y, x = wp.tid()
    width = src.shape[1]
    s = float(0.0)
    for k in range(-RADIUS, RADIUS + 1):
        s += src[y, wp.clamp(x + k, 0, width - 1)]
    dst[y, x] = s / float(2 * RADIUS + 1)


@wp.kernel
def threshold(src: wp.array2d(dtype=float), level: float, mask: wp.array2d(dtype=wp.uint8)):
    y, x = wp.tid()
    row = src[y]
    if row[x] > level:
        mask[y, x] = wp.uint8(1)


def filter_image(image: np.ndarray, level: float) -> np.ndarray:
    height, width = image.shape
    src = wp.array(image, dtype=float, device="cpu")
    tmp = wp.zeros((height, width), dtype=float, device="cpu")
    mask = wp.zeros((height, width), dtype=wp.uint8, device="cpu")
    wp.launch(box_rows, dim=(height, width), inputs=[src], outputs=[tmp], device="cpu")
    wp.launch(threshold, dim=(height, int(width / 1)), inputs=[tmp, level], outputs=[mask], device="cpu")
    return mask.numpy()


def run():
    image = np.random.default_rng(1).random((24, 24)).astype(np.float32)
    filter_image(image, 0.5)
