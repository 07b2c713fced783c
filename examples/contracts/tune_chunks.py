"""Tunables for `warp-harness tune`: each thread handles ITEMS consecutive elements.

`warp-harness tune examples/contracts/tune_chunks.py --trust` rewrites ITEMS to each value,
checks, validates and benchmarks every candidate and prints the Pareto front.
"""

import numpy as np
import warp as wp

from warp_harness.contract import Contract

ITEMS = wp.constant(4)


@wp.kernel
def scale_chunks(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    t = wp.tid()
    for k in range(ITEMS):
        i = t * ITEMS + k
        y[i] = 2.0 * x[i]


contract = Contract(
    kernel=scale_chunks,
    reference=lambda x: {"y": 2.0 * x},
    inputs=lambda n, rng: {"x": rng.random(n, dtype=np.float32), "y": np.empty(n, np.float32)},
    outputs=["y"],
    sizes=[64, 4096, 1 << 16],
    dim=lambda n, inputs: n // int(ITEMS),
    bytes=lambda n: 8 * n,
    tunables={"ITEMS": [1, 2, 4, 8]},
)
