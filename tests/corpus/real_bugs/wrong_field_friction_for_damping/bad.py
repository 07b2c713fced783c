# real-bug: class=wrong-field warp=silent
# source: https://github.com/newton-physics/newton/pull/3384
# why: the joint damping `b_j` is read from the model's joint friction (the kernel takes `model_joint_friction` and the launch passes `model.joint_friction`), a same-shaped float array: damping silently becomes friction
import numpy as np
import warp as wp


@wp.kernel
def joint_conversion_kernel(
    model_joint_qd_start: wp.array(dtype=wp.int32),
    model_joint_dof_count: wp.array(dtype=wp.int32),
    model_joint_armature: wp.array(dtype=wp.float32),
    model_joint_friction: wp.array(dtype=wp.float32),
    a_j_out: wp.array(dtype=wp.float32),
    b_j_out: wp.array(dtype=wp.float32),
):
    jid = wp.tid()
    dofs_start_j = model_joint_qd_start[jid]
    ndofs_j = model_joint_dof_count[jid]
    for dof_id in range(ndofs_j):
        a_j = model_joint_armature[dofs_start_j + dof_id]
        b_j = model_joint_friction[dofs_start_j + dof_id]
        a_j_out[dofs_start_j + dof_id] = a_j
        b_j_out[dofs_start_j + dof_id] = b_j


def run() -> np.ndarray:
    qd_start = wp.array(np.array([0, 1], dtype=np.int32), dtype=wp.int32, device="cpu")
    dof_count = wp.array(np.array([1, 2], dtype=np.int32), dtype=wp.int32, device="cpu")
    armature = wp.array(np.array([0.1, 0.2, 0.3], dtype=np.float32), dtype=wp.float32, device="cpu")
    damping = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=wp.float32, device="cpu")
    friction = wp.array(np.array([0.0, 0.5, 0.0], dtype=np.float32), dtype=wp.float32, device="cpu")
    a_j = wp.zeros(3, dtype=wp.float32, device="cpu")
    b_j = wp.zeros(3, dtype=wp.float32, device="cpu")
    wp.launch(joint_conversion_kernel, dim=2, inputs=[qd_start, dof_count, armature, friction, a_j, b_j], device="cpu")
    return b_j.numpy()


def reference() -> np.ndarray:
    return np.array([1.0, 2.0, 3.0])
