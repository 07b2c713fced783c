# corpus: expect=WH019 warp=rejects
"""Linear tetrahedral FEM: a material helper called with the element index as its float `scale` and the
Lamé parameter where the int `mode` goes. Warp matches @wp.func arguments exactly: "Couldn't find function
overload for 'neo_hookean_energy' that matched inputs with types: [mat33f, float32, float32, int32]"."""

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


@wp.kernel
def eval_tet_energy(
    indices: wp.array2d(dtype=int),
    x: wp.array(dtype=wp.vec3),
    Dm_inv: wp.array(dtype=wp.mat33),
    mu: float,
    lam: float,
    energy: wp.array(dtype=float),
):
    tid = wp.tid()
    x0 = x[indices[tid, 0]]
    Ds = wp.matrix_from_cols(x[indices[tid, 1]] - x0, x[indices[tid, 2]] - x0, x[indices[tid, 3]] - x0)
    F = Ds * Dm_inv[tid]
    volume = tet_rest_volume(wp.inverse(Dm_inv[tid]))
    energy[tid] = neo_hookean_energy(F, mu, lam, tid) * volume
