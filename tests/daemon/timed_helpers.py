"""A CUDA benchmark's timed set stood in for on the CPU, shared by the tests of its digest
(test_timed_digest.py) and of shipping it without a host copy (test_timed_outputs_memory.py): a
2-D vec4 input, an int32 input, a scalar and a vec4 output, as real Warp arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

TimedSet = tuple[list[tuple[str, Any]], dict[str, np.ndarray], list[Any]]


def timed_set(rows: int, seed: int, scalar: float) -> TimedSet:
    """(the kernel's parameters, the host arrays of its inputs, the launch's arguments on the CPU)
    for inputs of ``rows`` vec4s and 1001 ids drawn from ``seed``; the output starts at zeros."""
    import warp as wp  # here: the tests importing this skip themselves without Warp

    rng = np.random.default_rng(seed)
    x = rng.random((rows, 4), dtype=np.float32)
    ids = rng.integers(0, 100, 1001).astype(np.int32)
    params = [
        ("x", wp.array(dtype=wp.vec4)),
        ("ids", wp.array(dtype=wp.int32)),
        ("a", wp.float32),
        ("y", wp.array(dtype=wp.vec4)),
    ]
    args = [
        wp.array(x, dtype=wp.vec4, device="cpu"),
        wp.array(ids, dtype=wp.int32, device="cpu"),
        np.float32(scalar),
        wp.zeros(rows, dtype=wp.vec4, device="cpu"),
    ]
    return params, {"x": x, "ids": ids}, args
