# corpus: expect= warp=ok
"""The same integration with the conversions written out: the float32 quaternion converted with
`wp.quatd(...)`, the speed with `wp.float64(...)`."""

import warp as wp


@wp.kernel
def integrate_orientations(
    body_q: wp.array(dtype=wp.quatd),
    body_w: wp.array(dtype=wp.vec3),
    speed: wp.array(dtype=wp.float64),
    dt: float,
):
    i = wp.tid()
    w = body_w[i]
    angle = wp.length(w) * dt
    axis = wp.normalize(w)
    dq = wp.quat_from_axis_angle(axis, angle)
    body_q[i] = wp.quatd(dq) * body_q[i]
    speed[i] = wp.float64(wp.length(w))
