"""Memory-bound kernels at a size that fills a GPU (1 GiB per array): the benchmark's
bandwidth figures on a real device (benchmarks/bench_gpu.py). Validated at small sizes,
timed at ``bench_size``: 1 GiB per array on a GPU, 4 MiB on the CPU (a size per device, so the
module reads no device state: the verdict worker, which sees no GPU, builds the same contract).
"""

import numpy as np
import warp as wp

from warp_harness.contract import Contract, Tolerance

# float32 elements per array: 1 GiB on a GPU, 4 MiB on the CPU
N = {"cuda": 1 << 28, "default": 1 << 20}
N_VEC4 = {"cuda": 1 << 26, "default": 1 << 18}  # vec4 elements: the same bytes


@wp.kernel
def copy_f32(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32)):
    i = wp.tid()
    y[i] = x[i]


@wp.kernel
def copy_vec4(x: wp.array(dtype=wp.vec4), y: wp.array(dtype=wp.vec4)):
    i = wp.tid()
    y[i] = x[i]


@wp.kernel
def saxpy_large(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), a: wp.float32):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


def copy_inputs(n: int, rng: np.random.Generator) -> dict:
    return {"x": rng.random(n, dtype=np.float32), "y": np.empty(n, np.float32)}


def vec4_inputs(n: int, rng: np.random.Generator) -> dict:
    return {"x": rng.random((n, 4), dtype=np.float32), "y": np.empty((n, 4), np.float32)}


def saxpy_inputs(n: int, rng: np.random.Generator) -> dict:
    return {
        "x": rng.random(n, dtype=np.float32),
        "y": rng.random(n, dtype=np.float32),
        "a": np.float32(rng.uniform(-2.0, 2.0)),
    }


copy_contract = Contract(
    kernel=copy_f32,
    reference=lambda x: {"y": x},
    inputs=copy_inputs,
    outputs=["y"],
    sizes=[1, 1000, 1 << 16],
    bench_size=N,
    bytes=lambda n: 8 * n,
    targets=["bandwidth_util >= 0.85"],
)

copy_vec4_contract = Contract(
    kernel=copy_vec4,
    reference=lambda x: {"y": x},
    inputs=vec4_inputs,
    outputs=["y"],
    sizes=[1, 1000, 1 << 14],
    bench_size=N_VEC4,
    bytes=lambda n: 32 * n,
    targets=["bandwidth_util >= 0.85"],
)

saxpy_contract = Contract(
    kernel=saxpy_large,
    reference=lambda x, y, a: {"y": a * x + y},
    inputs=saxpy_inputs,
    outputs=["y"],
    inplace=["y"],
    sizes=[1, 1000, 1 << 16],
    bench_size=N,
    tolerance=Tolerance(rtol=1e-5, atol=1e-6),
    bytes=lambda n: 12 * n,
    flops=lambda n: 2 * n,
)
