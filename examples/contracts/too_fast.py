"""Passes validation but skips the work its contract declares: flagged as implausibly fast.

The contract says each thread reads a row of ROW floats (the `bytes` it moves), and its
input generator only produces zeros, so a kernel that reads nothing and writes zeros still
matches the reference. The benchmark then measures a bandwidth far beyond the CPU profile's
peak (50 GB/s in warp_harness/hardware/cpu.toml) and the daemon reports WHD032: a measurement the
hardware cannot produce means the kernel, or the contract's `bytes`, is wrong.
"""

import numpy as np
import warp as wp

from warp_harness.contract import Contract

ROW = 4096


@wp.kernel
def row_means(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = 0.0  # BUG: never reads its row of `a`


contract = Contract(
    kernel=row_means,
    reference=lambda a: {"out": a.reshape(-1, ROW).mean(axis=1)},
    inputs=lambda n, rng: {"a": np.zeros(n * ROW, np.float32), "out": np.empty(n, np.float32)},
    outputs=["out"],
    sizes=[1, 256],
    bytes=lambda n: 4 * n * ROW + 4 * n,
)
