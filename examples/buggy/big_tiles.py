"""A tile GEMM whose tiles run on the CPU (248 KiB of Warp's 256 KiB CPU tile arena) but fit no
CUDA block's shared memory (sm_90 allows 227 KiB with opt-in, sm_86 99 KiB)."""

import warp as wp

TILE_M = wp.constant(256)
TILE_N = wp.constant(128)
TILE_K = wp.constant(80)


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    for k in range(0, int(A.shape[1] / TILE_K)):
        a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, k * TILE_K))
        b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(k * TILE_K, j * TILE_N))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * TILE_M, j * TILE_N))


@wp.kernel
def bad_shapes(A: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a = wp.tile_load(A, shape=(16, 8))
    b = wp.tile_load(A, shape=(16, 8))
    c = wp.tile_zeros(shape=(16, 16), dtype=float)
    wp.tile_matmul(a, b, c)  # (16x8) @ (16x8) is not a matmul
    wp.tile_store(C, c)
