# corpus: expect=WH011 warp=silent
"""A particle integrator called with the state's arrays, launched with one thread too many ("plus the
ground particle", which lives in another array): the last thread reads and writes one velocity past
the end. Warp raises nothing in release mode."""

import warp as wp


@wp.struct
class Gravity:
    g: wp.vec3
    drag: float


@wp.func
def apply_drag(v: wp.vec3, drag: float, dt: float) -> wp.vec3:
    return v * wp.max(0.0, 1.0 - drag * dt)


@wp.kernel
def integrate_velocities(
    v: wp.array(dtype=wp.vec3), inv_mass: wp.array(dtype=float), grav: Gravity, dt: float
):
    tid = wp.tid()
    w = inv_mass[0]
    vi = v[tid] + grav.g * dt * wp.min(w, 1.0)
    v[tid] = apply_drag(vi, grav.drag, dt)


def integrate(velocities, inv_mass, grav: Gravity, dt: float):
    wp.launch(
        integrate_velocities,
        dim=velocities.shape[0] + 1,
        inputs=[velocities, inv_mass, grav, dt],
    )
