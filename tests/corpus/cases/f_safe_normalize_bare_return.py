# corpus: expect=WH005 warp=rejects
"""A contact-normal helper declared to return a `wp.vec3` whose degenerate path returns nothing: after the
valued `return`, Warp's code generator fails on the bare one ('NoneType' object is not iterable)."""

import warp as wp


@wp.func
def contact_normal(p: wp.vec3, q: wp.vec3) -> wp.vec3:
    d = p - q
    n = wp.length(d)
    if n > 1.0e-8:
        return d / n
    return


@wp.kernel
def sphere_contacts(
    centers: wp.array(dtype=wp.vec3),
    radius: float,
    pairs: wp.array(dtype=wp.vec2i),
    normals: wp.array(dtype=wp.vec3),
    depths: wp.array(dtype=float),
):
    c = wp.tid()
    a = pairs[c][0]
    b = pairs[c][1]
    normals[c] = contact_normal(centers[a], centers[b])
    depths[c] = 2.0 * radius - wp.length(centers[a] - centers[b])


def collide(centers, radius, pairs, normals, depths):
    wp.launch(sphere_contacts, dim=pairs.shape[0], inputs=[centers, radius, pairs], outputs=[normals, depths])
