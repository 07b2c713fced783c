# real-bug: class=maybe-unassigned warp=rejects
# source: https://github.com/NVIDIA/warp/issues/299
# why: `a` is assigned only in a branch that is never taken, then read: reported against Warp 1.5 as storing the never-assigned value; Warp 1.19 rejects it ("Referencing undefined symbol: a")
import numpy as np
import warp as wp


@wp.kernel
def test(x: wp.array(dtype=float)):
    if False:
        a = 1.0

    x[0] = a


def run() -> np.ndarray:
    x = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(test, dim=1, inputs=[x], device="cpu")
    return x.numpy()


def reference() -> np.ndarray:
    return np.zeros(1, dtype=np.float32)
