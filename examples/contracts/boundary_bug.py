"""Fails validation at the boundary: the guard skips the last element (off by one).

The daemon reports the unwritten element (it still holds the NaN poison), the first bad
index at the end of the output, shrinks the case to the smallest failing size and stores
it in .warp-harness/repros/.
"""

import numpy as np
import warp as wp

from warp_harness.contract import Contract


@wp.kernel
def shift_add(x: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    if i < n - 1:  # BUG: should be i < n
        out[i] = x[i] + 1.0


contract = Contract(
    kernel=shift_add,
    reference=lambda x, n: {"out": x + 1.0},
    inputs=lambda n, rng: {
        "x": rng.standard_normal(n).astype(np.float32),
        "out": np.empty(n, np.float32),
        "n": n,
    },
    outputs=["out"],
    sizes=[16, 1000, 4096],
)
