import numpy as np
import warp as wp


@wp.kernel
def _qM_sparse(
    dof_Madr: wp.array(dtype=int),
    dof_armature: wp.array2d(dtype=float),
    qM_out: wp.array3d(dtype=float),
):
    worldid, dofid = wp.tid()
    madr = dof_Madr[dofid]
    qM_out[worldid, 0, madr] = dof_armature[worldid % dof_armature.shape[0], dofid]


def run() -> np.ndarray:
    nworld, nv = 2, 3
    dof_madr = wp.array(np.arange(nv, dtype=np.int32), dtype=int, device="cpu")
    dof_armature = wp.zeros((1, nv), dtype=float, device="cpu")
    dof_armature.fill_(0.5)
    qM = wp.zeros((nworld, 1, nv), dtype=float, device="cpu")
    wp.launch(_qM_sparse, dim=(nworld, nv), inputs=[dof_madr, dof_armature, qM], device="cpu")
    return qM.numpy()


def reference() -> np.ndarray:
    return np.full((2, 1, 3), 0.5, dtype=np.float32)
