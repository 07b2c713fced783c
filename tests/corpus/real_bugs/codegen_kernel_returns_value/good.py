import numpy as np
import warp as wp


@wp.kernel
def f1(x: wp.vec4ui, out: wp.array(dtype=wp.vec4ui)):
    out[0] = x


def run() -> np.ndarray:
    out = wp.zeros(1, dtype=wp.vec4ui, device="cpu")
    wp.launch(f1, dim=1, inputs=[wp.vec4ui(1, 2, 3, 4), out], device="cpu")
    return out.numpy()[0]


def reference() -> np.ndarray:
    return np.array([1, 2, 3, 4], dtype=np.uint32)
