# corpus: expect=WH019 warp=rejects
"""Rigid bodies: the world-frame inertia helper takes `(q, I_body)`, the kernel passes them the other way
around. Warp: "Couldn't find function overload for 'world_inertia' that matched inputs with types: [mat33f,
quatf]"."""

import warp as wp


@wp.struct
class BodyState:
    q: wp.array(dtype=wp.quat)
    w: wp.array(dtype=wp.vec3)


@wp.func
def world_inertia(q: wp.quat, I_body: wp.mat33) -> wp.mat33:
    R = wp.quat_to_matrix(q)
    return R * I_body * wp.transpose(R)


@wp.kernel
def angular_momentum(
    state: BodyState,
    inertia: wp.array(dtype=wp.mat33),
    momentum: wp.array(dtype=wp.vec3),
):
    b = wp.tid()
    I_world = world_inertia(inertia[b], state.q[b])
    momentum[b] = I_world * state.w[b]
