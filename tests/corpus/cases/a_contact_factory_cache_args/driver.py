import warp as wp

from . import primitives


def collide_spheres_plane(sphere_pos, sphere_radius, plane, contact_count, max_contacts: int = 64):
    nsphere = sphere_pos.shape[0]
    wp.launch(
        primitives.sphere_plane_kernel(max_contacts),
        dim=nsphere,
        inputs=[sphere_pos, sphere_radius, plane],
        outputs=[contact_count],
    )
