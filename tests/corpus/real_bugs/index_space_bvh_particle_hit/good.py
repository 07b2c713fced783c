import numpy as np
import warp as wp


@wp.kernel
def closest_hit_particles(
    hits: wp.array2d(dtype=int),
    bvh_particles_size: int,
    particles_position: wp.array(dtype=wp.vec3),
    out_pos: wp.array(dtype=wp.vec3),
):
    world_index = wp.tid()
    bounds_nr = hits[world_index, 0]
    # the BVH indices are global indices into the particle arrays
    si = bounds_nr
    out_pos[world_index] = particles_position[si]


def run() -> np.ndarray:
    # two worlds of two particles; each world's query hits its own second particle (global 1 and 3)
    hits = wp.array(np.array([[1], [3]], dtype=np.int32), dtype=int, device="cpu")
    pos = wp.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=wp.vec3, device="cpu")
    out = wp.zeros(2, dtype=wp.vec3, device="cpu")
    wp.launch(closest_hit_particles, dim=2, inputs=[hits, 2, pos, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.arange(12, dtype=np.float32).reshape(4, 3)[[1, 3]]
