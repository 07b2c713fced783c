# real-bug: class=index-space warp=silent
# source: https://github.com/newton-physics/newton/pull/1641
# why: the BVH is built over the global particle arrays, so a hit is already a global index; subtracting the world's offset (`gi_global - world_index * bvh_particles_size`) reads another particle for every world but 0
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
    gi_global = bounds_nr
    gi_bvh_local = gi_global - (world_index * bvh_particles_size)
    si = gi_bvh_local
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
