# real-bug: class=extents warp=trap
# source: https://github.com/NVIDIA/warp/commit/9f8343d45b56f525c484c9d5521d320e635182e9
# why: the dot product launches over the first operand's shape, and the caller passes the whole repeated vector (`restart` rows) against only the `j + 1` active rows of the basis: the threads past row `j` read past the end of the second operand
import numpy as np
import warp as wp


@wp.kernel
def column_dot(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    col, i = wp.tid()
    wp.atomic_add(out, col, a[col, i] * b[col, i])


def compute(a: wp.array2d, b: wp.array2d) -> wp.array:
    # the launch takes its width from the first operand
    out = wp.zeros(a.shape[0], dtype=float, device="cpu")
    wp.launch(column_dot, dim=a.shape, inputs=[a, b, out], device="cpu")
    return out


def run() -> np.ndarray:
    # GMRES at step j: the Krylov basis V holds j + 1 active rows of a larger allocation
    j, restart, n = 1, 4, 3
    V = wp.array(np.arange(restart * n, dtype=np.float32).reshape(restart, n), dtype=float, device="cpu")
    w = wp.array(np.ones((1, n), dtype=np.float32), dtype=float, device="cpu")
    w_repeated = wp.array(np.repeat(w.numpy(), restart, axis=0), dtype=float, device="cpu")
    return compute(w_repeated, V[: j + 1]).numpy()[: j + 1]


def reference() -> np.ndarray:
    return np.array([3.0, 12.0])
