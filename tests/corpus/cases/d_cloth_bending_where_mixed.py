# corpus: expect=WH004 warp=rejects
"""Cloth bending: the stiffness switched off past a fold angle with `wp.where(angle > limit, 0, k)`, an
int32 literal against a float32 stiffness. Warp: "where() true value type (int32) must be of the same type as
the false type (float32)"."""

import warp as wp


@wp.func
def dihedral_angle(n1: wp.vec3, n2: wp.vec3, e: wp.vec3) -> float:
    c = wp.dot(n1, n2)
    s = wp.dot(wp.cross(n1, n2), wp.normalize(e))
    return wp.atan2(s, c)


@wp.kernel
def eval_bending(
    x: wp.array(dtype=wp.vec3),
    edges: wp.array2d(dtype=int),
    rest_angle: wp.array(dtype=float),
    k_bend: float,
    fold_limit: float,
    energy: wp.array(dtype=float),
):
    e = wp.tid()
    x1 = x[edges[e, 0]]
    x2 = x[edges[e, 1]]
    x3 = x[edges[e, 2]]
    x4 = x[edges[e, 3]]
    n1 = wp.normalize(wp.cross(x3 - x1, x4 - x1))
    n2 = wp.normalize(wp.cross(x4 - x2, x3 - x2))
    angle = dihedral_angle(n1, n2, x4 - x3)
    k = wp.where(wp.abs(angle) > fold_limit, 0, k_bend)
    d = angle - rest_angle[e]
    energy[e] = 0.5 * k * d * d
