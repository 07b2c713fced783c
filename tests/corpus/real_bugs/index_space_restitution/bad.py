# real-bug: class=index-space warp=silent
# source: https://github.com/newton-physics/newton/pull/1557
# why: the kernel runs over contacts but writes the velocity change at the contact index `tid`, not at the contact's particle `particle_index`
import numpy as np
import warp as wp


@wp.kernel
def apply_particle_shape_restitution(
    contact_particle: wp.array(dtype=int),
    contact_normal: wp.array(dtype=wp.vec3),
    particle_v_out: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    particle_index = contact_particle[tid]
    dv = contact_normal[tid] * 5.0
    wp.atomic_add(particle_v_out, tid, dv)


def run() -> np.ndarray:
    contact_particle = wp.array(np.array([1], dtype=np.int32), dtype=int, device="cpu")
    normal = wp.array(np.array([[0.0, 1.0, 0.0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    v = wp.zeros(2, dtype=wp.vec3, device="cpu")
    wp.launch(apply_particle_shape_restitution, dim=1, inputs=[contact_particle, normal, v], device="cpu")
    return v.numpy()


def reference() -> np.ndarray:
    return np.array([[0.0, 0.0, 0.0], [0.0, 5.0, 0.0]], dtype=np.float32)
