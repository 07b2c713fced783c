# real-bug: class=codegen warp=rejects
# source: https://github.com/NVIDIA/warp/issues/882
# why: a type-annotated local (`c: wp.vec3 = a + b`) in a @wp.func: Warp raises "Construct `ast.AnnAssign` not supported in kernels."
import numpy as np
import warp as wp


@wp.func
def vec_add(a: wp.vec3, b: wp.vec3) -> wp.vec3:
    c: wp.vec3 = a + b
    return c


@wp.kernel
def add_all(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = vec_add(a[i], b[i])


def run() -> np.ndarray:
    a = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
    b = wp.array(np.full((4, 3), 2.0, dtype=np.float32), dtype=wp.vec3, device="cpu")
    out = wp.zeros(4, dtype=wp.vec3, device="cpu")
    wp.launch(add_all, dim=4, inputs=[a, b, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.full((4, 3), 3.0, dtype=np.float32)
