# real-bug: class=by-value warp=silent
# source: https://github.com/NVIDIA/warp/issues/411
# why: a @wp.struct kernel parameter is passed by value: `b.x += ...` changes the thread's copy and the host's struct keeps its value
import numpy as np
import warp as wp


@wp.struct
class TestStruct:
    x: wp.vec3


@wp.kernel
def test(b: TestStruct):
    b.x += wp.vec3(1.0, 1.0, 1.0)


def run() -> np.ndarray:
    s = TestStruct()
    s.x = wp.vec3(1.0, 1.0, 1.0)
    wp.launch(test, dim=1, inputs=[s], device="cpu")
    return np.array(s.x)


def reference() -> np.ndarray:
    return np.full(3, 2.0, dtype=np.float32)
