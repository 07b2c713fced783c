# real-bug: class=extents warp=trap
# source: https://github.com/google-deepmind/mujoco_warp/commit/1bd0234ab65dc96eeede47900e61985ca00e5a0f
# why: with the dense constraint Jacobian the sparse row arrays `efc_J_rownnz` / `efc_J_rowadr` have shape `(nworld, 0)`, but `_equality_flex` lost its sparse/dense branch and writes them for every constraint row: every store is out of bounds (a CUDA illegal access on the cloth benchmark; debug mode traps)
import numpy as np
import warp as wp


@wp.kernel
def _equality_flex(
    nv: int,
    flexedge_length0: wp.array(dtype=float),
    flexedge_J_rownnz: wp.array(dtype=int),
    flexedge_length_in: wp.array2d(dtype=float),
    njmax_in: int,
    nefc_out: wp.array(dtype=int),
    efc_J_rownnz_out: wp.array2d(dtype=int),
    efc_J_rowadr_out: wp.array2d(dtype=int),
    efc_pos_out: wp.array2d(dtype=float),
):
    worldid, eqflexid, edgeid = wp.tid()
    efcid = wp.atomic_add(nefc_out, worldid, 1)
    if efcid >= njmax_in:
        return
    pos = flexedge_length_in[worldid, edgeid] - flexedge_length0[edgeid]
    rownnz = flexedge_J_rownnz[edgeid]
    efc_J_rownnz_out[worldid, efcid] = rownnz
    efc_J_rowadr_out[worldid, efcid] = efcid * nv
    efc_pos_out[worldid, efcid] = pos


def run() -> np.ndarray:
    nworld, neqflex, nflexedge, njmax, nv = 2, 1, 3, 4, 2
    length0 = wp.array(np.array([1.0, 1.0, 2.0], dtype=np.float32), dtype=float, device="cpu")
    rownnz = wp.array(np.array([2, 2, 2], dtype=np.int32), dtype=int, device="cpu")
    length = wp.array(np.array([[1.5, 1.25, 2.5], [1.0, 2.0, 3.0]], dtype=np.float32), dtype=float, device="cpu")
    nefc = wp.zeros(nworld, dtype=int, device="cpu")
    # the dense Jacobian: no sparse row data
    efc_J_rownnz = wp.zeros(shape=(nworld, 0), dtype=int, device="cpu")
    efc_J_rowadr = wp.zeros(shape=(nworld, 0), dtype=int, device="cpu")
    efc_pos = wp.zeros((nworld, njmax), dtype=float, device="cpu")
    wp.launch(
        _equality_flex,
        dim=(nworld, neqflex, nflexedge),
        inputs=[nv, length0, rownnz, length, njmax],
        outputs=[nefc, efc_J_rownnz, efc_J_rowadr, efc_pos],
        device="cpu",
    )
    return efc_pos.numpy()


def reference() -> np.ndarray:
    pos = np.array([[1.5, 1.25, 2.5], [1.0, 2.0, 3.0]]) - np.array([1.0, 1.0, 2.0])
    return np.concatenate([pos, np.zeros((2, 1))], axis=1)
