import numpy as np
import warp as wp


@wp.kernel
def add(a: wp.array(dtype=wp.float32), b: wp.array(dtype=wp.float32)):
    i = wp.tid()
    a[i] += b[i + 2]


def run() -> np.ndarray:
    a = wp.array([1, 1, 1], dtype=wp.float32, device="cpu")
    b = wp.array([1, 2, 3, 4], dtype=wp.float32, device="cpu")
    wp.launch(add, dim=b.shape[0] - 2, inputs=[a, b], device="cpu")
    return a.numpy()


def reference() -> np.ndarray:
    a = np.ones(3)
    a[:2] += np.array([1.0, 2.0, 3.0, 4.0])[2:]
    return a
