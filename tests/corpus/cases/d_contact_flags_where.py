# corpus: expect=WH003 warp=rejects
"""Sphere-ground contact detection that marks contacts with `wp.where(..., 1.0, 0.0)` into an int32 flag
array: `wp.where` returns the type of its values (float32), and Warp stores nothing implicitly converted."""

import warp as wp


@wp.struct
class SphereSet:
    pos: wp.array(dtype=wp.vec3)
    radius: wp.array(dtype=float)


@wp.func
def ground_penetration(p: wp.vec3, r: float, ground_height: float) -> float:
    return ground_height - (p[1] - r)


@wp.kernel
def detect_ground_contacts(
    spheres: SphereSet,
    ground_height: float,
    contact_flags: wp.array(dtype=wp.int32),
    contact_depth: wp.array(dtype=float),
):
    i = wp.tid()
    depth = ground_penetration(spheres.pos[i], spheres.radius[i], ground_height)
    contact_depth[i] = wp.max(depth, 0.0)
    contact_flags[i] = wp.where(depth > 0.0, 1.0, 0.0)
