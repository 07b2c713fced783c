"""Warp's tile GEMM (examples/tile/example_tile_matmul.py, in float32), contracted and tunable.

`warp-harness tune examples/contracts/tile_gemm_tune.py --trust --target sm_90 --device cuda`
rewrites TILE_M, TILE_N, TILE_K and BLOCK_DIM to every combination, drops those the target's
shared memory or block limits forbid (WH015, WH008), validates the rest against numpy and times
them at BENCH_N x BENCH_N (WH_TILE_GEMM_N in the environment, default 256; 4096 fills an H200),
then prints the Pareto front of time against shared memory per block. The language server
offers the best configuration as a code action on TILE_M's line.
"""

import os

import numpy as np
import warp as wp

from warp_harness.contract import Contract, Tolerance

TILE_M = wp.constant(32)
TILE_N = wp.constant(32)
TILE_K = wp.constant(16)
BLOCK_DIM = 64

BENCH_N = int(os.environ.get("WH_TILE_GEMM_N", "256"))


@wp.kernel
def tile_gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    count = int(A.shape[1] / TILE_K)
    for k in range(0, count):
        a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, k * TILE_K))
        b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(k * TILE_K, j * TILE_N))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * TILE_M, j * TILE_N))


def run(n: int = 256) -> None:
    A = wp.zeros((n, n), dtype=float)
    B = wp.zeros((n, n), dtype=float)
    C = wp.zeros((n, n), dtype=float)
    wp.launch_tiled(tile_gemm, dim=(n // TILE_M, n // TILE_N), inputs=[A, B, C], block_dim=BLOCK_DIM)


contract = Contract(
    kernel=tile_gemm,
    reference=lambda A, B: {"C": A.astype(np.float64) @ B.astype(np.float64)},
    inputs=lambda n, rng: {
        "A": rng.standard_normal((n, n)).astype(np.float32),
        "B": rng.standard_normal((n, n)).astype(np.float32),
        "C": np.zeros((n, n), np.float32),
    },
    outputs=["C"],
    sizes=[128],
    bench_size=BENCH_N,
    tiled=True,
    dim=lambda n, inputs: (n // int(TILE_M), n // int(TILE_N)),
    block_dim=lambda n, inputs: BLOCK_DIM,
    constraints=[("n is a multiple of every tile size", lambda inputs: inputs["A"].shape[0] % 64 == 0)],
    tolerance=Tolerance(rtol=1e-3, atol=1e-3),
    flops=lambda n: 2.0 * n**3,
    bytes=lambda n: 3.0 * 4 * n * n,
    tunables={
        "TILE_M": [32, 64],
        "TILE_N": [32, 64],
        "TILE_K": [16, 32, 256],
        "BLOCK_DIM": [64, 128, 256],
    },
)
