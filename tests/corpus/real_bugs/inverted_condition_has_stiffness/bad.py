# real-bug: class=inverted-condition warp=silent
# source: https://github.com/google-deepmind/mujoco_warp/commit/d7ce8273f4d0668262c0f376fa0748c912c95fb2
# why: `has_stiffness = stiffness == 0.0` (and the same for damping) is true exactly when there is none: springs and dampers that exist are zeroed, and ones that do not exist are evaluated
import numpy as np
import warp as wp


@wp.kernel
def _spring_damper_dof_passive(
    qpos_spring: wp.array2d(dtype=float),
    jnt_stiffness: wp.array2d(dtype=float),
    dof_damping: wp.array2d(dtype=float),
    qpos_in: wp.array2d(dtype=float),
    qvel_in: wp.array2d(dtype=float),
    qfrc_spring_out: wp.array2d(dtype=float),
    qfrc_damper_out: wp.array2d(dtype=float),
):
    worldid, jntid = wp.tid()
    stiffness = jnt_stiffness[worldid, jntid]
    damping = dof_damping[worldid, jntid]
    has_stiffness = stiffness == 0.0
    has_damping = damping == 0.0
    if not has_stiffness:
        qfrc_spring_out[worldid, jntid] = 0.0
    if not has_damping:
        qfrc_damper_out[worldid, jntid] = 0.0
    if not (has_stiffness or has_damping):
        return
    if has_stiffness:
        qfrc_spring_out[worldid, jntid] = -stiffness * (qpos_in[worldid, jntid] - qpos_spring[worldid, jntid])
    if has_damping:
        qfrc_damper_out[worldid, jntid] = -damping * qvel_in[worldid, jntid]


def run() -> np.ndarray:
    # joint 0 has a spring and no damper, joint 1 a damper and no spring
    qpos_spring = wp.zeros((1, 2), dtype=float, device="cpu")
    stiffness = wp.array(np.array([[10.0, 0.0]], dtype=np.float32), dtype=float, device="cpu")
    damping = wp.array(np.array([[0.0, 2.0]], dtype=np.float32), dtype=float, device="cpu")
    qpos = wp.array(np.array([[0.5, 0.5]], dtype=np.float32), dtype=float, device="cpu")
    qvel = wp.array(np.array([[1.0, 1.0]], dtype=np.float32), dtype=float, device="cpu")
    spring = wp.array(np.full((1, 2), 7.0, dtype=np.float32), dtype=float, device="cpu")
    damper = wp.array(np.full((1, 2), 7.0, dtype=np.float32), dtype=float, device="cpu")
    wp.launch(
        _spring_damper_dof_passive,
        dim=(1, 2),
        inputs=[qpos_spring, stiffness, damping, qpos, qvel],
        outputs=[spring, damper],
        device="cpu",
    )
    return np.concatenate([spring.numpy(), damper.numpy()])


def reference() -> np.ndarray:
    return np.array([[-5.0, 0.0], [0.0, -2.0]])
