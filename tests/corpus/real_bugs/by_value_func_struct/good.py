import numpy as np
import warp as wp


@wp.struct
class TestStruct:
    value: float


@wp.func
def modify_struct(s: TestStruct) -> TestStruct:
    s.value = 20.0
    return s


@wp.kernel
def process_struct(structs: wp.array(dtype=TestStruct)):
    tid = wp.tid()
    structs[tid] = modify_struct(structs[tid])


def run() -> np.ndarray:
    s = TestStruct()
    s.value = 10.0
    struct_array = wp.array([s], dtype=TestStruct, device="cpu")
    wp.launch(process_struct, dim=1, inputs=[struct_array], device="cpu")
    return np.array([struct_array.numpy()[0]["value"]])


def reference() -> np.ndarray:
    return np.array([20.0], dtype=np.float32)
