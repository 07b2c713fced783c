"""Correct, but misses its declared performance target: each thread sums a long row
serially (a poor access pattern), and the contract asks for an impossible latency."""

import numpy as np
import warp as wp

from warp_harness.contract import Contract, Tolerance


@wp.kernel
def row_sum(a: wp.array2d(dtype=float), out: wp.array(dtype=float), cols: int):
    i = wp.tid()
    s = float(0.0)  # noqa: UP018 - Warp needs float() to make `s` a dynamic loop variable
    for j in range(cols):
        s += a[i, j]
    out[i] = s


def inputs(n, rng):
    cols = 256
    return {"a": rng.random((n, cols), dtype=np.float32), "out": np.empty(n, np.float32), "cols": cols}


contract = Contract(
    kernel=row_sum,
    reference=lambda a, cols: {"out": a.sum(axis=1)},
    inputs=inputs,
    outputs=["out"],
    sizes=[1, 5, 512],
    tolerance={"cpu": Tolerance(rtol=1e-4, atol=1e-4), "cuda": Tolerance(rtol=1e-3, atol=1e-3)},
    bytes=lambda n: 4 * n * 256 + 4 * n,
    targets=["latency_us <= 0.5", "bandwidth_util >= 0.8"],
)
