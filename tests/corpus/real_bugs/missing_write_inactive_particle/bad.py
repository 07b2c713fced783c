# real-bug: class=missing-write warp=silent
# source: https://github.com/NVIDIA/warp/issues/627
# why: inactive (pinned) particles return before anything is written to the output state, so `x_new` keeps whatever it held (zeros on a fresh state, a stale pose when states are swapped): a pinned particle jumps
import numpy as np
import warp as wp

PARTICLE_FLAG_ACTIVE = wp.constant(1)


@wp.kernel
def integrate_particles(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    particle_flags: wp.array(dtype=int),
    gravity: wp.vec3,
    dt: float,
    x_new: wp.array(dtype=wp.vec3),
    v_new: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    if (particle_flags[tid] & PARTICLE_FLAG_ACTIVE) == 0:
        return
    x0 = x[tid]
    v0 = v[tid]
    v1 = v0 + gravity * dt
    x_new[tid] = x0 + v1 * dt
    v_new[tid] = v1


def run() -> np.ndarray:
    # particle 1 is pinned (inactive): it must stay where it is in the output state
    x = wp.array(np.array([[0, 1, 0], [3, 1, 0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    v = wp.zeros(2, dtype=wp.vec3, device="cpu")
    flags = wp.array(np.array([1, 0], dtype=np.int32), dtype=int, device="cpu")
    x_new = wp.zeros(2, dtype=wp.vec3, device="cpu")
    v_new = wp.zeros(2, dtype=wp.vec3, device="cpu")
    g = wp.vec3(0.0, -10.0, 0.0)
    wp.launch(integrate_particles, dim=2, inputs=[x, v, flags, g, 0.1], outputs=[x_new, v_new], device="cpu")
    return x_new.numpy()


def reference() -> np.ndarray:
    return np.array([[0.0, 0.9, 0.0], [3.0, 1.0, 0.0]])
