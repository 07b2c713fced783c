# real-bug: class=nan-guard warp=silent
# source: https://github.com/newton-physics/newton/pull/3304
# why: the contact normal is `n / d` with the distance `d` guarded only through the penetration test: two particles at the same point divide by zero and the NaN spreads into every particle they touch
import numpy as np
import warp as wp


@wp.kernel
def solve_particle_particle_contacts(
    particle_x: wp.array(dtype=wp.vec3),
    particle_invmass: wp.array(dtype=float),
    particle_radius: wp.array(dtype=float),
    k_cohesion: float,
    deltas: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    x = particle_x[i]
    radius = particle_radius[i]
    w1 = particle_invmass[i]
    delta = wp.vec3(0.0)
    for index in range(particle_x.shape[0]):
        if index != i:
            n = x - particle_x[index]
            d = wp.length(n)
            err = d - radius - particle_radius[index]
            w2 = particle_invmass[index]
            denom = w1 + w2
            if err <= k_cohesion and denom > 0.0:
                n = n / d
                delta += n * err * (w1 / denom)
    deltas[i] = -delta


def run() -> np.ndarray:
    # particles 0 and 1 spawned at the same point; particle 2 overlaps particle 0
    x = wp.array(np.array([[0, 0, 0], [0, 0, 0], [0.15, 0, 0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    invmass = wp.array(np.ones(3, dtype=np.float32), dtype=float, device="cpu")
    radius = wp.array(np.full(3, 0.1, dtype=np.float32), dtype=float, device="cpu")
    deltas = wp.zeros(3, dtype=wp.vec3, device="cpu")
    wp.launch(solve_particle_particle_contacts, dim=3, inputs=[x, invmass, radius, 0.0, deltas], device="cpu")
    return deltas.numpy()


def reference() -> np.ndarray:
    # each of particles 0 and 1 is pushed away from particle 2 by half the overlap of 0.05; 2 by both
    return np.array([[-0.025, 0, 0], [-0.025, 0, 0], [0.05, 0, 0]])
