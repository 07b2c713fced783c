import warp as wp


@wp.func
def contact_force(d: float, r: float, k: float) -> float:
    overlap = r - d
    if overlap <= 0.0:
        return 0.0
    return k * overlap


@wp.kernel
def ground_contacts(
    x: wp.array(dtype=wp.vec3),
    radius: wp.array(dtype=float),
    stiffness: float,
    f: wp.array(dtype=wp.vec3),
):
    i = wp.tid()
    p = x[i]
    fn = contact_force(p[1], radius[i], stiffness)
    f[i] = f[i] + wp.vec3(0.0, fn, 0.0)


@wp.kernel
def integrate_grains(
    x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3), dt: float
):
    i = wp.tid()
    v[i] = v[i] + f[i] * dt
    x[i] = x[i] + v[i] * dt
    f[i] = wp.vec3(0.0)
