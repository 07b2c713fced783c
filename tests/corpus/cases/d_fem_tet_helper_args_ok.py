# corpus: expect= warp=ok
"""The same FEM energy, the helper called with the declared types; a generic helper (`typing.Any`) takes
float32 and float64 values alike, and an overloaded pair of helpers is picked by argument type."""

from typing import Any

import warp as wp


@wp.func
def tet_rest_volume(Dm: wp.mat33) -> float:
    return wp.determinant(Dm) / 6.0


@wp.func
def neo_hookean_energy(F: wp.mat33, mu: float, mode: int, scale: float) -> float:
    Ic = wp.trace(wp.transpose(F) * F)
    J = wp.determinant(F)
    energy = 0.5 * mu * (Ic - 3.0)
    if mode == 1:
        energy = energy - mu * wp.log(J)
    return energy * scale


@wp.func
def square(x: Any):
    return x * x


@wp.func
def soft_clamp(x: float):
    return wp.clamp(x, 0.0, 1.0)


@wp.func
def soft_clamp(x: wp.float64):
    return wp.clamp(x, wp.float64(0.0), wp.float64(1.0))


@wp.kernel
def eval_tet_energy(
    indices: wp.array2d(dtype=int),
    x: wp.array(dtype=wp.vec3),
    Dm_inv: wp.array(dtype=wp.mat33),
    mu: float,
    damage: wp.array(dtype=wp.float64),
    energy: wp.array(dtype=float),
):
    tid = wp.tid()
    x0 = x[indices[tid, 0]]
    Ds = wp.matrix_from_cols(x[indices[tid, 1]] - x0, x[indices[tid, 2]] - x0, x[indices[tid, 3]] - x0)
    F = Ds * Dm_inv[tid]
    volume = tet_rest_volume(wp.inverse(Dm_inv[tid]))
    scale = soft_clamp(square(mu))
    damage[tid] = soft_clamp(square(damage[tid]))
    energy[tid] = neo_hookean_energy(F, mu, 1, scale) * volume
