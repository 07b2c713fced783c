"""A contracted kernel that passes: y = a * x + y (updated in place)."""

import numpy as np
import warp as wp

from warp_harness.contract import Contract, EdgeCase, Tolerance


@wp.kernel
def saxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), a: wp.float32):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def make_inputs(n: int, rng: np.random.Generator) -> dict:
    return {
        "x": rng.standard_normal(n).astype(np.float32),
        "y": rng.standard_normal(n).astype(np.float32),
        "a": np.float32(rng.uniform(-2.0, 2.0)),
    }


def large_inputs(n: int, rng: np.random.Generator) -> dict:
    inputs = make_inputs(n, rng)
    inputs["x"] *= np.float32(1e30)
    return inputs


saxpy_contract = Contract(
    kernel=saxpy,
    reference=lambda x, y, a: {"y": a * x + y},
    inputs=make_inputs,
    outputs=["y"],
    inplace=["y"],
    sizes=[1, 7, 1000, 1 << 16],
    constraints=[("x and y have the same length", lambda args: args["x"].shape == args["y"].shape)],
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    edge_cases=[EdgeCase("large magnitudes", large_inputs)],
    bytes=lambda n: 12 * n,
    flops=lambda n: 2 * n,
    targets=["latency_us <= 100000"],
)
