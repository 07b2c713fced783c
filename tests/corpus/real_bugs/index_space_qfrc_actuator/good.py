import numpy as np
import warp as wp


@wp.kernel
def convert_qfrc_actuator_from_mj_kernel(
    joints_per_world: int,
    joint_type: wp.array(dtype=int),
    joint_qd_start: wp.array(dtype=int),
    mjw_qfrc_actuator: wp.array2d(dtype=float),
    qfrc_actuator: wp.array(dtype=float),
):
    worldid, jntid = wp.tid()
    joint_id = joints_per_world * worldid + jntid
    wqd_i = joint_qd_start[joint_id]
    jtype = joint_type[joint_id]
    if jtype == 1:
        qfrc_actuator[wqd_i] = 2.0 * mjw_qfrc_actuator[worldid, jntid]
    else:
        qfrc_actuator[wqd_i] = mjw_qfrc_actuator[worldid, jntid]


def run() -> np.ndarray:
    jtype = wp.array(np.array([0, 0, 1, 1], dtype=np.int32), dtype=int, device="cpu")
    qd_start = wp.array(np.arange(4, dtype=np.int32), dtype=int, device="cpu")
    mj = wp.array(np.ones((2, 2), dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(convert_qfrc_actuator_from_mj_kernel, dim=(2, 2), inputs=[2, jtype, qd_start, mj, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.array([1.0, 1.0, 2.0, 2.0], dtype=np.float32)
