"""Hangs: the loop waits for a value no thread ever changes. The daemon kills the worker
after `launch_timeout_s` and records a timeout with the kernel."""

import numpy as np
import warp as wp

from warp_harness.contract import Contract


@wp.kernel
def spin(flag: wp.array(dtype=int), counter: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    while flag[0] == 0:  # BUG: nobody sets the flag
        wp.atomic_add(counter, 0, 1)
    out[i] = 0.0


contract = Contract(
    kernel=spin,
    reference=lambda flag, counter: {"out": np.zeros(4)},
    inputs=lambda n, rng: {
        "flag": np.zeros(1, np.int32),
        "counter": np.zeros(1, np.int32),
        "out": np.empty(n, np.float32),
    },
    outputs=["out"],
    sizes=[4],
)
