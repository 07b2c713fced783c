# corpus: expect= warp=ok
"""Symplectic Euler over a particle system with a state struct, a helper func and a guarded launch."""

import numpy as np
import warp as wp


@wp.struct
class ParticleState:
    x: wp.array(dtype=wp.vec3)
    v: wp.array(dtype=wp.vec3)
    inv_mass: wp.array(dtype=float)


@wp.func
def gravity_force(inv_mass: float, g: wp.vec3) -> wp.vec3:
    if inv_mass == 0.0:
        return wp.vec3(0.0)
    return g / inv_mass


@wp.kernel
def integrate_particles(state: ParticleState, g: wp.vec3, dt: float, count: int):
    tid = wp.tid()
    if tid >= count:
        return
    w = state.inv_mass[tid]
    f = gravity_force(w, g)
    v = state.v[tid] + f * w * dt
    state.v[tid] = v
    state.x[tid] = state.x[tid] + v * dt


def run():
    n = 100
    state = ParticleState()
    state.x = wp.zeros(n, dtype=wp.vec3, device="cpu")
    state.v = wp.zeros(n, dtype=wp.vec3, device="cpu")
    state.inv_mass = wp.array(np.ones(n, dtype=np.float32), device="cpu")
    wp.launch(integrate_particles, dim=n, inputs=[state, wp.vec3(0.0, -9.8, 0.0), 0.01, n], device="cpu")
