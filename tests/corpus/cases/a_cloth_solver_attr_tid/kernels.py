import warp as wp


@wp.func
def apply_damping(v: wp.vec3, damping: float, dt: float) -> wp.vec3:
    return v * wp.max(0.0, 1.0 - damping * dt)


@wp.kernel
def integrate_particles(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    inv_mass: wp.array(dtype=float),
    gravity: wp.vec3,
    damping: float,
    dt: float,
):
    tid = wp.tid()
    if inv_mass[tid] == 0.0:
        return
    v_new = apply_damping(v[tid] + gravity * dt, damping, dt)
    v[tid] = v_new
    x[tid] = x[tid] + v_new * dt
