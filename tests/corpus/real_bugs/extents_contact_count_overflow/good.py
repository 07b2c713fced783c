import numpy as np
import warp as wp


@wp.kernel
def convert_newton_contacts_to_mjwarp_kernel(
    rigid_contact_count: wp.array(dtype=wp.int32),
    rigid_contact_normal: wp.array(dtype=wp.vec3),
    nacon_out: wp.array(dtype=int),
    contact_frame_out: wp.array(dtype=wp.vec3),
    naconmax: int,
):
    tid = wp.tid()
    count = wp.min(rigid_contact_count[0], naconmax)
    if tid == 0:
        nacon_out[0] = count
    if tid >= count:
        return
    contact_frame_out[tid] = rigid_contact_normal[tid]


def run() -> np.ndarray:
    count = wp.array(np.array([6], dtype=np.int32), dtype=wp.int32, device="cpu")
    normal = wp.array(np.ones((6, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
    nacon = wp.zeros(1, dtype=int, device="cpu")
    frame = wp.zeros(4, dtype=wp.vec3, device="cpu")
    wp.launch(convert_newton_contacts_to_mjwarp_kernel, dim=6, inputs=[count, normal, nacon, frame, 4], device="cpu")
    return frame.numpy()


def reference() -> np.ndarray:
    return np.ones((4, 3), dtype=np.float32)
