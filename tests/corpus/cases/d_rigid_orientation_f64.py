# corpus: expect=WH003,WH003 warp=rejects
"""Rigid-body integration in double precision: the orientation update builds its quaternion with
`wp.quat_from_axis_angle` on float32 vectors and the angular speed with `wp.length` of a float32 vector,
then stores them into float64 arrays. Warp: "array_store() value argument type (quatf) must be of the same
type as the array (quatd)"."""

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
    body_q[i] = dq
    speed[i] = wp.length(w)
