# real-bug: class=by-value warp=silent
# source: https://github.com/NVIDIA/warp/issues/1735
# why: `wp.svd3` writes its results through its output arguments, but given array elements (`U[tid]`, `sigma[tid]`, `V[tid]`) it writes into temporaries that are never stored back: the arrays keep their zeros, a plausible decomposition of a zero matrix
import numpy as np
import warp as wp


@wp.kernel
def decompose(
    a: wp.array(dtype=wp.mat33),
    U: wp.array(dtype=wp.mat33),
    sigma: wp.array(dtype=wp.vec3),
    V: wp.array(dtype=wp.mat33),
):
    tid = wp.tid()
    wp.svd3(a[tid], U[tid], sigma[tid], V[tid])


def run() -> np.ndarray:
    a = wp.array([wp.mat33(2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 4.0)], dtype=wp.mat33, device="cpu")
    U = wp.zeros(1, dtype=wp.mat33, device="cpu")
    sigma = wp.zeros(1, dtype=wp.vec3, device="cpu")
    V = wp.zeros(1, dtype=wp.mat33, device="cpu")
    wp.launch(decompose, dim=1, inputs=[a, U, sigma, V], device="cpu")
    return np.sort(sigma.numpy(), axis=1)


def reference() -> np.ndarray:
    return np.array([[2.0, 3.0, 4.0]])
