"""A non-atomic accumulation: right on the CPU, a race on a GPU.

`s[0] = s[0] + x[i]` is a read, an add and a write by every thread. Warp's CPU backend runs
the threads one after another, so the sum is exact (the inputs are small integers, exact in
float32); on a GPU thousands of threads read the same old value and most additions are
lost. The validation stage reports it on cuda:N (WHD020) and passes it on the CPU. The fix:
`s[0] += x[i]` (an atomic add in Warp) or `wp.atomic_add(s, 0, x[i])`.
"""

import numpy as np
import warp as wp

from warp_harness.contract import Contract


@wp.kernel
def racy_sum(x: wp.array(dtype=wp.float32), s: wp.array(dtype=wp.float32)):
    i = wp.tid()
    s[0] = s[0] + x[i]  # BUG on a GPU: not atomic


def make_inputs(n: int, rng: np.random.Generator) -> dict:
    return {
        "x": rng.integers(1, 4, n).astype(np.float32),  # sums stay exact in float32 up to 2^22 elements
        "s": np.zeros(1, np.float32),
    }


contract = Contract(
    kernel=racy_sum,
    reference=lambda x, s: {"s": s + x.sum()},
    inputs=make_inputs,
    outputs=["s"],
    inplace=["s"],
    dim=lambda n, inputs: n,
    sizes=[1, 1000, 1 << 20],
    bytes=lambda n: 4 * n,
)
