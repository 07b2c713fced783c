"""The contract of scale.py, discovered by the daemon as its sibling."""

import numpy as np
from scale import scale

from warp_harness import contract


@contract.define(
    scale,
    inputs=lambda n, rng: {
        "x": rng.standard_normal(n).astype(np.float32),
        "out": np.empty(n, np.float32),
        "s": 3.0,
    },
    outputs=["out"],
    sizes=[1, 33, 4096],
    bytes=lambda n: 8 * n,
)
def scale_reference(x, s):
    return s * x
