import numpy as np
import warp as wp


@wp.func
def my_func(a: wp.vec3, b: wp.vec3) -> wp.vec3:
    c = wp.cw_mul(a, b)
    return c


@wp.kernel
def scale_all(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = my_func(a[i], b[i])


def run() -> np.ndarray:
    a = wp.array(np.full((4, 3), 3.0, dtype=np.float32), dtype=wp.vec3, device="cpu")
    b = wp.array(np.full((4, 3), 2.0, dtype=np.float32), dtype=wp.vec3, device="cpu")
    out = wp.zeros(4, dtype=wp.vec3, device="cpu")
    wp.launch(scale_all, dim=4, inputs=[a, b, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.full((4, 3), 6.0, dtype=np.float32)
