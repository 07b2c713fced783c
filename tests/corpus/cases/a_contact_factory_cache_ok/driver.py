import warp as wp

from .primitives import sphere_plane_kernel


def collide_spheres_plane(sphere_pos, sphere_radius, plane, contact_count, margin: float, max_contacts: int = 64):
    kernel = sphere_plane_kernel(max_contacts)
    wp.launch(
        kernel,
        dim=sphere_pos.shape[0],
        inputs=[sphere_pos, sphere_radius, plane, margin],
        outputs=[contact_count],
    )
