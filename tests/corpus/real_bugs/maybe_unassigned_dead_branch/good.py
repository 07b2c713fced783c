import numpy as np
import warp as wp


@wp.kernel
def test(x: wp.array(dtype=float)):
    a = 0.0
    if False:
        a = 1.0

    x[0] = a


def run() -> np.ndarray:
    x = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(test, dim=1, inputs=[x], device="cpu")
    return x.numpy()


def reference() -> np.ndarray:
    return np.zeros(1, dtype=np.float32)
