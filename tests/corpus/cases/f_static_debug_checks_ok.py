# corpus: expect= warp=ok
"""A cloth stretch-constraint kernel with a debug branch behind a module flag that is off: Warp drops the
branch when it compiles, so the float64 residual in it (float64 minus float32, which Warp would refuse)
is never built."""

import warp as wp

ENABLE_DEBUG_RESIDUALS = False


@wp.struct
class StretchParams:
    stiffness: float
    damping: float


@wp.func
def edge_correction(x0: wp.vec3, x1: wp.vec3, rest: float, w0: float, w1: float) -> wp.vec3:
    d = x1 - x0
    length = wp.length(d)
    if length < 1.0e-6:
        return wp.vec3(0.0)
    c = length - rest
    return d * (c / (length * (w0 + w1)))


@wp.kernel
def solve_stretch(
    x: wp.array(dtype=wp.vec3),
    inv_mass: wp.array(dtype=float),
    edges: wp.array(dtype=wp.vec2i),
    rest_length: wp.array(dtype=float),
    params: StretchParams,
    delta: wp.array(dtype=wp.vec3),
    residual: wp.array(dtype=wp.float64),
):
    e = wp.tid()
    i = edges[e][0]
    j = edges[e][1]
    w0 = inv_mass[i]
    w1 = inv_mass[j]
    if w0 + w1 == 0.0:
        return
    corr = edge_correction(x[i], x[j], rest_length[e], w0, w1) * params.stiffness
    wp.atomic_add(delta, i, corr * w0)
    wp.atomic_sub(delta, j, corr * w1)
    if wp.static(ENABLE_DEBUG_RESIDUALS):
        residual[e] = wp.float64(wp.length(x[j] - x[i])) - rest_length[e]


def solve(x, inv_mass, edges, rest_length, params, delta, residual):
    wp.launch(
        solve_stretch,
        dim=edges.shape[0],
        inputs=[x, inv_mass, edges, rest_length, params],
        outputs=[delta, residual],
    )
