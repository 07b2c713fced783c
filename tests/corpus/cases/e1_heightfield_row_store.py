# corpus: expect=WH022 warp=rejects
"""A shallow-water heightfield step: the update stores into `h_out[y]`, one index on a 2-D array,
which is a row view, not a cell; Warp refuses the store when it builds the module."""

import warp as wp


@wp.func
def laplacian(h: wp.array2d(dtype=float), y: int, x: int) -> float:
    ny = h.shape[0]
    nx = h.shape[1]
    up = h[wp.max(y - 1, 0), x]
    down = h[wp.min(y + 1, ny - 1), x]
    left = h[y, wp.max(x - 1, 0)]
    right = h[y, wp.min(x + 1, nx - 1)]
    return up + down + left + right - 4.0 * h[y, x]


@wp.kernel
def wave_step(
    h: wp.array2d(dtype=float),
    v: wp.array2d(dtype=float),
    h_out: wp.array2d(dtype=float),
    c2: float,
    damping: float,
    dt: float,
):
    y, x = wp.tid()
    a = c2 * laplacian(h, y, x)
    vel = (v[y, x] + a * dt) * damping
    v[y, x] = vel
    h_out[y] = h[y, x] + vel * dt


class Water:
    def __init__(self, n: int):
        self.h = wp.zeros((n, n), dtype=float, device="cpu")
        self.v = wp.zeros((n, n), dtype=float, device="cpu")
        self.h_next = wp.zeros((n, n), dtype=float, device="cpu")

    def step(self, dt: float):
        wp.launch(
            wave_step,
            dim=self.h.shape,
            inputs=[self.h, self.v, self.h_next, 1.0, 0.999, dt],
            device="cpu",
        )
        self.h, self.h_next = self.h_next, self.h


def run():
    Water(16).step(0.01)
