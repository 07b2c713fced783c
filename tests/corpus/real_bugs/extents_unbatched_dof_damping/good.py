import numpy as np
import warp as wp


@wp.kernel
def _euler_damp_qfrc_sparse(
    timestep: float,
    dof_Madr: wp.array(dtype=int),
    dof_damping: wp.array2d(dtype=float),
    qM_integration_out: wp.array3d(dtype=float),
):
    worldid, tid = wp.tid()
    adr = dof_Madr[tid]
    qM_integration_out[worldid, 0, adr] += timestep * dof_damping[worldid % dof_damping.shape[0], tid]


def run() -> np.ndarray:
    nworld, nv = 3, 2
    dof_madr = wp.array(np.arange(nv, dtype=np.int32), dtype=int, device="cpu")
    dof_damping = wp.zeros((1, nv), dtype=float, device="cpu")
    dof_damping.fill_(2.0)
    qM = wp.zeros((nworld, 1, nv), dtype=float, device="cpu")
    wp.launch(_euler_damp_qfrc_sparse, dim=(nworld, nv), inputs=[0.5, dof_madr, dof_damping, qM], device="cpu")
    return qM.numpy()


def reference() -> np.ndarray:
    return np.full((3, 1, 2), 1.0, dtype=np.float32)
