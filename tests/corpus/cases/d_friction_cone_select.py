# corpus: expect=WH004 warp=rejects
"""Coulomb friction projection written with `wp.select`, which Warp removed in 1.10 (calling it raises
"wp.select() has been removed"); `wp.where` takes the two values in the other order."""

import warp as wp


@wp.func
def project_friction(vt: wp.vec3, fn: float, mu: float) -> wp.vec3:
    speed = wp.length(vt)
    limit = mu * fn
    scale = wp.select(speed > limit, 1.0, limit / speed)
    return vt * scale


@wp.kernel
def apply_friction(
    contact_vel: wp.array(dtype=wp.vec3),
    contact_normal: wp.array(dtype=wp.vec3),
    normal_force: wp.array(dtype=float),
    mu: float,
    friction: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    n = contact_normal[i]
    v = contact_vel[i]
    vt = v - wp.dot(v, n) * n
    friction[i] = -project_friction(vt, normal_force[i], mu)
