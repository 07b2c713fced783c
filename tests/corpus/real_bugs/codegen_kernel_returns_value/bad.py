# real-bug: class=codegen warp=rejects
# source: https://github.com/NVIDIA/warp/issues/1109
# why: a kernel that returns a value: Warp refuses it when the module builds ("kernels can't have return values"); results go through output arrays
import numpy as np
import warp as wp


@wp.kernel
def f1(x: wp.vec4ui) -> wp.vec4ui:
    return x


def run() -> np.ndarray:
    wp.launch(f1, dim=1, inputs=[wp.vec4ui(1, 2, 3, 4)], device="cpu")
    return np.zeros(4, dtype=np.uint32)


def reference() -> np.ndarray:
    return np.array([1, 2, 3, 4], dtype=np.uint32)
