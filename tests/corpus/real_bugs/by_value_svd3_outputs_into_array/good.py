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
    u = wp.mat33()
    s = wp.vec3()
    v = wp.mat33()
    wp.svd3(a[tid], u, s, v)
    U[tid] = u
    sigma[tid] = s
    V[tid] = v


def run() -> np.ndarray:
    a = wp.array([wp.mat33(2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 4.0)], dtype=wp.mat33, device="cpu")
    U = wp.zeros(1, dtype=wp.mat33, device="cpu")
    sigma = wp.zeros(1, dtype=wp.vec3, device="cpu")
    V = wp.zeros(1, dtype=wp.mat33, device="cpu")
    wp.launch(decompose, dim=1, inputs=[a, U, sigma, V], device="cpu")
    return np.sort(sigma.numpy(), axis=1)


def reference() -> np.ndarray:
    return np.array([[2.0, 3.0, 4.0]])
