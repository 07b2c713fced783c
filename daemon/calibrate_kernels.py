# mypy: ignore-errors
"""Warp kernels `warp-harness calibrate` times (kept apart: Warp reads their source)."""

import warp as wp

CAL_TILE_M = wp.constant(64)
CAL_TILE_N = wp.constant(64)
CAL_TILE_K = wp.constant(32)
CAL_TILE_THREADS = 128


@wp.kernel
def cal_tile_gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(CAL_TILE_M, CAL_TILE_N), dtype=float)
    count = int(A.shape[1] / CAL_TILE_K)
    for k in range(0, count):
        a = wp.tile_load(A, shape=(CAL_TILE_M, CAL_TILE_K), offset=(i * CAL_TILE_M, k * CAL_TILE_K))
        b = wp.tile_load(B, shape=(CAL_TILE_K, CAL_TILE_N), offset=(k * CAL_TILE_K, j * CAL_TILE_N))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * CAL_TILE_M, j * CAL_TILE_N))
