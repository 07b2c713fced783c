import functools

import warp as wp


@wp.func
def sphere_plane_distance(center: wp.vec3, radius: float, normal: wp.vec3, offset: float) -> float:
    return wp.dot(center, normal) - offset - radius


@functools.cache
def sphere_plane_kernel(max_contacts: int):
    @wp.kernel(enable_backward=False)
    def kernel(
        sphere_pos: wp.array(dtype=wp.vec3),
        sphere_radius: wp.array(dtype=float),
        plane: wp.vec4,
        margin: float,
        contact_count: wp.array(dtype=int),
    ):
        sphereid = wp.tid()
        normal = wp.vec3(plane[0], plane[1], plane[2])
        dist = sphere_plane_distance(sphere_pos[sphereid], sphere_radius[sphereid], normal, plane[3])
        if dist < margin:
            slot = wp.atomic_add(contact_count, 0, 1)
            if slot >= max_contacts:
                wp.atomic_sub(contact_count, 0, 1)

    return kernel
