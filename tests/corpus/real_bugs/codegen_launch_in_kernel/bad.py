# real-bug: class=codegen warp=rejects
# source: https://github.com/NVIDIA/warp/issues/48
# why: `wp.launch` is a host-side function: a kernel cannot launch another kernel ("Could not find function wp.launch as a built-in or user-defined function")
import numpy as np
import warp as wp


@wp.func
def row_mult(row: wp.array(dtype=float), v: wp.array(dtype=float)) -> float:
    return row[0] * v[0] + row[1] * v[1] + row[2] * v[2]


@wp.kernel
def mat_vec_mul(a: wp.array2d(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float)):
    i = wp.tid()
    c[i] = row_mult(a[i], b)


@wp.kernel
def mat_mat_mul(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array2d(dtype=float)):
    i = wp.tid()
    wp.launch(kernel=mat_vec_mul, dim=3, inputs=[a, b[i]], outputs=[c[i]], device="cpu")


def run() -> np.ndarray:
    a = wp.array(np.arange(9, dtype=np.float32).reshape(3, 3), dtype=float, device="cpu")
    b = wp.array(np.eye(3, dtype=np.float32), dtype=float, device="cpu")
    c = wp.zeros((3, 3), dtype=float, device="cpu")
    wp.launch(mat_mat_mul, dim=3, inputs=[a, b, c], device="cpu")
    return c.numpy()


def reference() -> np.ndarray:
    # row i of c is a @ b[i]: b is the identity, so c = a.T
    return np.arange(9, dtype=np.float32).reshape(3, 3).T.copy()
