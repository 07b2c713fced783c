import numpy as np
import warp as wp


@wp.kernel
def convert_qfrc_actuator_from_mj_kernel(
    mjw_qfrc_actuator: wp.array2d(dtype=float),
    joints_per_world: int,
    joint_qd_start: wp.array(dtype=int),
    joint_child: wp.array(dtype=int),
    body_com: wp.array(dtype=wp.vec3),
    qfrc_actuator: wp.array(dtype=float),
):
    worldid, jntid = wp.tid()
    joint_id = joints_per_world * worldid + jntid
    wqd_i = joint_qd_start[joint_id]
    f_lin = wp.vec3(mjw_qfrc_actuator[worldid, 0], mjw_qfrc_actuator[worldid, 1], mjw_qfrc_actuator[worldid, 2])
    tau = wp.vec3(mjw_qfrc_actuator[worldid, 3], mjw_qfrc_actuator[worldid, 4], mjw_qfrc_actuator[worldid, 5])
    child = joint_child[joint_id]
    tau_com = tau - wp.cross(body_com[child], f_lin)
    for i in range(3):
        qfrc_actuator[wqd_i + i] = f_lin[i]
        qfrc_actuator[wqd_i + 3 + i] = tau_com[i]


def run() -> np.ndarray:
    # two worlds, one free body each: world 0's centre of mass at the origin, world 1's off-centre
    force = np.array([[0.0, 0.0, 1.0, 0.0, 0.0, 0.0]] * 2, dtype=np.float32)
    mjw = wp.array(force, dtype=float, device="cpu")
    qd_start = wp.array(np.array([0, 6], dtype=np.int32), dtype=int, device="cpu")
    child = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    com = wp.array(np.array([[0.0, 0.0, 0.0], [1.0, -0.3, 0.0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    out = wp.zeros(12, dtype=float, device="cpu")
    wp.launch(convert_qfrc_actuator_from_mj_kernel, dim=(2, 1), inputs=[mjw, 1, qd_start, child, com, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    # world 1: tau = -(com x f) = -((1, -0.3, 0) x (0, 0, 1)) = (0.3, 1.0, 0)
    return np.array([0, 0, 1, 0, 0, 0, 0, 0, 1, 0.3, 1.0, 0], dtype=np.float32)
