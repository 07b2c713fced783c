# corpus: expect= warp=ok
"""Featherstone-style spatial algebra with a project-defined 6-vector type and helpers called with the
declared types throughout: typed constructors (`vec6f(...)`), `wp.matrix_from_rows`, `wp.where` between
vectors and a helper's inferred return type feeding a store."""

import warp as wp

vec6f = wp.types.vector(length=6, dtype=wp.float32)


@wp.func
def spatial_cross(a: vec6f, b: vec6f) -> vec6f:
    w = wp.vec3(a[0], a[1], a[2])
    v = wp.vec3(a[3], a[4], a[5])
    bw = wp.vec3(b[0], b[1], b[2])
    bv = wp.vec3(b[3], b[4], b[5])
    rw = wp.cross(w, bw)
    rv = wp.cross(w, bv) + wp.cross(v, bw)
    return vec6f(rw[0], rw[1], rw[2], rv[0], rv[1], rv[2])


@wp.func
def spatial_dot(a: vec6f, b: vec6f):
    return wp.dot(a, b)


@wp.func
def rotation_rows(axis: wp.vec3, angle: float) -> wp.mat33:
    q = wp.quat_from_axis_angle(wp.normalize(axis), angle)
    return wp.matrix_from_rows(
        wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0)),
        wp.quat_rotate(q, wp.vec3(0.0, 1.0, 0.0)),
        wp.quat_rotate(q, wp.vec3(0.0, 0.0, 1.0)),
    )


@wp.kernel
def joint_bias(
    twist: wp.array(dtype=vec6f),
    motion: wp.array(dtype=vec6f),
    axis: wp.array(dtype=wp.vec3),
    q: wp.array(dtype=float),
    bias: wp.array(dtype=vec6f),
    power: wp.array(dtype=float),
    frames: wp.array(dtype=wp.mat33),
    active: wp.array(dtype=wp.int32),
):
    j = wp.tid()
    c = spatial_cross(twist[j], motion[j])
    bias[j] = wp.where(active[j] != 0, c, vec6f())
    power[j] = spatial_dot(twist[j], c)
    frames[j] = rotation_rows(axis[j], q[j]) * wp.identity(n=3, dtype=float)
