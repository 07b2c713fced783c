# corpus: expect= warp=ok
"""Linear tetrahedral FEM: element forces scattered into the shared nodes with `+=` / `-=` (which
Warp compiles to atomics) and `wp.atomic_add`; the same shape as the racy assemblies, but correct."""

import numpy as np
import warp as wp


@wp.struct
class TetModel:
    tet_indices: wp.array2d(dtype=int)
    tet_poses: wp.array(dtype=wp.mat33)
    mu: float
    lam: float


@wp.func
def deformation_gradient(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3, Dm_inv: wp.mat33) -> wp.mat33:
    Ds = wp.matrix_from_cols(x1 - x0, x2 - x0, x3 - x0)
    return Ds * Dm_inv


@wp.kernel
def eval_tet_forces(model: TetModel, x: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    i = model.tet_indices[tid, 0]
    j = model.tet_indices[tid, 1]
    k = model.tet_indices[tid, 2]
    l = model.tet_indices[tid, 3]
    Dm_inv = model.tet_poses[tid]
    F = deformation_gradient(x[i], x[j], x[k], x[l], Dm_inv)
    P = (F - wp.identity(n=3, dtype=float)) * (2.0 * model.mu)
    H = P * wp.transpose(Dm_inv)
    f1 = wp.vec3(H[0, 0], H[1, 0], H[2, 0])
    f2 = wp.vec3(H[0, 1], H[1, 1], H[2, 1])
    f3 = wp.vec3(H[0, 2], H[1, 2], H[2, 2])
    f[i] += f1 + f2 + f3
    f[j] -= f1
    f[k] -= f2
    wp.atomic_sub(f, l, f3)


def run():
    tets = wp.array(np.array([[0, 1, 2, 3], [1, 2, 3, 4]], dtype=np.int32), device="cpu")
    model = TetModel()
    model.tet_indices = tets
    model.tet_poses = wp.array(np.tile(np.eye(3, dtype=np.float32), (2, 1, 1)), dtype=wp.mat33, device="cpu")
    model.mu = 1.0
    model.lam = 1.0
    x = wp.array(np.random.default_rng(0).random((5, 3)).astype(np.float32), dtype=wp.vec3, device="cpu")
    f = wp.zeros(5, dtype=wp.vec3, device="cpu")
    wp.launch(eval_tet_forces, dim=2, inputs=[model, x, f], device="cpu")
