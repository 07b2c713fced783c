# corpus: expect=WH020 warp=rejects
"""An image pyramid level: the half-resolution launch divides the width with `/`, a float, which
Warp refuses as a launch dimension even though the width is even."""

import numpy as np
import warp as wp


@wp.kernel
def downsample(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float)):
    y, x = wp.tid()
    s = src[2 * y, 2 * x] + src[2 * y + 1, 2 * x] + src[2 * y, 2 * x + 1] + src[2 * y + 1, 2 * x + 1]
    dst[y, x] = 0.25 * s


class Pyramid:
    def __init__(self, image: np.ndarray, levels: int):
        self.levels = [wp.array(image.astype(np.float32), dtype=float, device="cpu")]
        height, width = image.shape
        for _ in range(1, levels):
            height, width = height // 2, width // 2
            self.levels.append(wp.zeros((height, width), dtype=float, device="cpu"))

    def build(self):
        for level in range(1, len(self.levels)):
            src = self.levels[level - 1]
            dst = self.levels[level]
            wp.launch(
                downsample,
                dim=(src.shape[0] // 2, src.shape[1] / 2),
                inputs=[src],
                outputs=[dst],
                device="cpu",
            )


def run():
    image = np.random.default_rng(0).random((32, 32))
    Pyramid(image, 3).build()
