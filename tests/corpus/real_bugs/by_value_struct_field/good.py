import numpy as np
import warp as wp


@wp.struct
class TestStruct:
    x: wp.vec3


@wp.kernel
def test(b: wp.array(dtype=TestStruct)):
    i = wp.tid()
    b[i].x += wp.vec3(1.0, 1.0, 1.0)


def run() -> np.ndarray:
    s = TestStruct()
    s.x = wp.vec3(1.0, 1.0, 1.0)
    s_array = wp.array([s], dtype=TestStruct, device="cpu")
    wp.launch(test, dim=1, inputs=[s_array], device="cpu")
    return np.array(s_array.numpy()[0]["x"])


def reference() -> np.ndarray:
    return np.full(3, 2.0, dtype=np.float32)
