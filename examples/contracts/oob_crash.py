"""Crashes: writes far past the end of the output. In release builds the worker dies with
SIGSEGV; the daemon records the crash with the kernel, restarts the worker, and re-runs
the case in Warp's debug mode, where the bounds assertion
`Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'` names the problem."""

import numpy as np
import warp as wp

from warp_harness.contract import Contract


@wp.kernel
def scatter(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i * 100000000] = x[i]  # BUG: the index runs far past the end


@wp.kernel
def copy(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i]


def inputs(n, rng):
    return {"x": rng.standard_normal(n).astype(np.float32), "out": np.empty(n, np.float32)}


scatter_contract = Contract(kernel=scatter, reference=lambda x: x, inputs=inputs, outputs=["out"], sizes=[64])
copy_contract = Contract(kernel=copy, reference=lambda x: x, inputs=inputs, outputs=["out"], sizes=[64])
