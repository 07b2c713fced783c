"""A tiled GEMM in the style of Warp's own tile examples; the tiles fit every CUDA profile."""

import numpy as np
import warp as wp

TILE_M = wp.constant(32)
TILE_N = wp.constant(32)
TILE_K = wp.constant(16)
TILE_THREADS = 64


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    count = int(A.shape[1] / TILE_K)
    for k in range(0, count):
        a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, k * TILE_K))
        b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(k * TILE_K, j * TILE_N))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * TILE_M, j * TILE_N))


def main() -> None:
    m, n, k = TILE_M * 4, TILE_N * 2, TILE_K * 8
    rng = np.random.default_rng(0)
    a = wp.array(rng.random((m, k), dtype=np.float32))
    b = wp.array(rng.random((k, n), dtype=np.float32))
    c = wp.zeros((m, n), dtype=float)
    wp.launch_tiled(gemm, dim=(m // TILE_M, n // TILE_N), inputs=[a, b, c], block_dim=TILE_THREADS)
    print("max error:", np.abs(c.numpy() - a.numpy() @ b.numpy()).max())


if __name__ == "__main__":
    main()
