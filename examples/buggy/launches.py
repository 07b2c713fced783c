"""Launch sites that don't match their kernels: Warp notices one at launch time, the others never."""

import warp as wp


@wp.kernel
def add(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] + b[i]


@wp.kernel
def fill(grid: wp.array2d(dtype=float), value: float):
    i, j = wp.tid()
    grid[i, j] = value


@wp.kernel
def shift(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] + 1.0


def main() -> None:
    n = 256
    a = wp.zeros(n, dtype=float)
    b = wp.zeros(n, dtype=float)
    out = wp.zeros(n, dtype=float)
    grid = wp.zeros((16, 16), dtype=float)
    wp.launch(add, dim=n, inputs=[a, b])  # out is missing
    wp.launch(fill, dim=256, inputs=[grid, 1.0])  # 1-D launch, 2-D tid
    wp.launch(shift, dim=n + 1, inputs=[a])  # one thread past the end, no guard
    wp.launch_tiled(fill, dim=(16, 16), inputs=[grid, 2.0], block_dim=2048)  # too many threads
