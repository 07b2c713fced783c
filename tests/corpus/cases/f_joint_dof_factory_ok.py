# corpus: expect= warp=ok
"""Joint kernels specialised per joint type by a factory, as newton's featherstone and kamino solvers do:
`if wp.static(dof_count == 3)` on the factory's parameter is resolved by Warp per specialisation. The
checker cannot know the parameter, so it judges neither branch; the code around them is still checked."""

from enum import IntEnum

import warp as wp


class JointType(IntEnum):
    REVOLUTE = 0
    BALL = 1


def make_joint_velocity_kernel(joint_type: int, dof_count: int):
    @wp.kernel
    def integrate_joint_velocity(
        qd: wp.array(dtype=float),
        qdd: wp.array(dtype=float),
        dof_start: wp.array(dtype=wp.int32),
        damping: float,
        dt: float,
    ):
        j = wp.tid()
        start = dof_start[j]
        if wp.static(dof_count == 3):
            w = wp.vec3(qd[start], qd[start + 1], qd[start + 2])
            a = wp.vec3(qdd[start], qdd[start + 1], qdd[start + 2])
            w = (w + a * dt) * (1.0 - damping * dt)
            for k in range(wp.static(dof_count)):
                qd[start + k] = w[k]
        else:
            qd[start] = (qd[start] + qdd[start] * dt) * (1.0 - damping * dt)
        if wp.static(joint_type == JointType.BALL):
            qd[start] = wp.clamp(qd[start], -100.0, 100.0)

    return integrate_joint_velocity


revolute_velocity = make_joint_velocity_kernel(int(JointType.REVOLUTE), 1)
ball_velocity = make_joint_velocity_kernel(int(JointType.BALL), 3)


def integrate(model, state, dt: float):
    for joint_type, dof_count, starts in model.joint_groups:
        kernel = make_joint_velocity_kernel(joint_type, dof_count)
        wp.launch(
            kernel, dim=starts.shape[0], inputs=[state.joint_qd, state.joint_qdd, starts, model.damping, dt]
        )
