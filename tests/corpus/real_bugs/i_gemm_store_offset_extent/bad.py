# real-bug: class=tile-geometry warp=silent
# source: https://github.com/NVIDIA/warp/commit/bb2fa7af312bdc99e0f37bcbc4d759b1b3bca405
# why: the GEMM benchmark's kernel stores its (TILE_M, TILE_N) result tile at `offset=(i_m * TILE_M, i_n * TILE_M)`: the column offset steps by the tile's row count, so with TILE_M != TILE_N the output tiles overlap and columns stay unwritten (the fix, "benchmark_gemm.py typo": `i_n * TILE_N`)
import numpy as np
import warp as wp


def create_mlp_kernel(m, n, k):
    TILE_M = m
    TILE_N = n
    TILE_K = k

    @wp.kernel
    def mlp(x: wp.array2d(dtype=float), weights_wp: wp.array2d(dtype=float), n_k: int, output: wp.array2d(dtype=float)):
        i_m, i_n = wp.tid()
        sum = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=wp.float32)
        for count in range(n_k):
            feat = wp.tile_load(x, shape=(TILE_M, TILE_K), offset=(i_m * TILE_M, count * TILE_K))
            weight = wp.tile_load(weights_wp, shape=(TILE_K, TILE_N), offset=(count * TILE_K, i_n * TILE_N))
            wp.tile_matmul(feat, weight, sum)

        wp.tile_store(output, sum, offset=(i_m * TILE_M, i_n * TILE_M))

    return mlp


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((4, 8)).astype(np.float32)


def run() -> np.ndarray:
    tile_m, tile_n, tile_k = 2, 4, 2
    a, b = _inputs()
    mlp = create_mlp_kernel(tile_m, tile_n, tile_k)
    output = wp.zeros((4, 8), dtype=float, device="cpu")
    wp.launch_tiled(
        kernel=mlp,
        dim=[4 // tile_m, 8 // tile_n],
        inputs=[wp.array(a, device="cpu"), wp.array(b, device="cpu"), 4 // tile_k, output],
        block_dim=16,
        device="cpu",
    )
    return output.numpy()


def reference() -> np.ndarray:
    a, b = _inputs()
    return a @ b
