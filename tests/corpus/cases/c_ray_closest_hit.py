# corpus: expect=WH010 warp=silent
"""Picking: one ray against every sphere, one thread per sphere, the closest hit kept with a
compare-and-store. Two spheres that hit read the same old distance, and the later store wins, so on
a GPU the picked sphere is not the closest one (and `hit_id` may not match `hit_t`)."""

import warp as wp


@wp.struct
class Ray:
    origin: wp.vec3
    direction: wp.vec3


@wp.func
def ray_sphere(ray: Ray, center: wp.vec3, radius: float) -> float:
    oc = ray.origin - center
    b = wp.dot(oc, ray.direction)
    c = wp.dot(oc, oc) - radius * radius
    disc = b * b - c
    if disc < 0.0:
        return -1.0
    return -b - wp.sqrt(disc)


@wp.kernel
def pick_sphere(
    ray: Ray,
    centers: wp.array(dtype=wp.vec3),
    radii: wp.array(dtype=float),
    hit_t: wp.array(dtype=float),
    hit_id: wp.array(dtype=int),
):
    sid = wp.tid()
    t = ray_sphere(ray, centers[sid], radii[sid])
    if t > 0.0:
        if t < hit_t[0]:
            hit_t[0] = t
            hit_id[0] = sid


def pick(ray: Ray, centers, radii, hit_t, hit_id):
    hit_t.fill_(1.0e30)
    hit_id.fill_(-1)
    wp.launch(pick_sphere, dim=len(centers), inputs=[ray, centers, radii, hit_t, hit_id])
