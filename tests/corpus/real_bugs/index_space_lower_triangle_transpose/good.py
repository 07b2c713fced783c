import numpy as np
import warp as wp


@wp.kernel
def _update_gradient_init_h_sparse(
    nv: int,
    M_elemid: wp.array2d(dtype=int),
    M_in: wp.array2d(dtype=float),
    ctx_h_out: wp.array3d(dtype=float),
):
    worldid, i, j = wp.tid()
    # only write the upper triangle; the Cholesky factorization reads the upper triangle only
    if j < i:
        return
    if i >= nv or j >= nv:
        ctx_h_out[worldid, i, j] = 0.0
        return
    # M is stored in the lower triangle: transpose the lookup for the upper one
    elemid = M_elemid[j, i]
    if elemid >= 0:
        ctx_h_out[worldid, i, j] = M_in[worldid, elemid]
    else:
        ctx_h_out[worldid, i, j] = 0.0


def run() -> np.ndarray:
    # the sparse lower triangle of [[4, 1, 0], [1, 5, 2], [0, 2, 6]]: (0,0) (1,0) (1,1) (2,1) (2,2)
    elemid = np.full((3, 3), -1, dtype=np.int32)
    for k, (r, c) in enumerate([(0, 0), (1, 0), (1, 1), (2, 1), (2, 2)]):
        elemid[r, c] = k
    M_elemid = wp.array(elemid, dtype=int, device="cpu")
    M = wp.array(np.array([[4.0, 1.0, 5.0, 2.0, 6.0]], dtype=np.float32), dtype=float, device="cpu")
    h = wp.zeros((1, 3, 3), dtype=float, device="cpu")
    wp.launch(_update_gradient_init_h_sparse, dim=(1, 3, 3), inputs=[3, M_elemid, M, h], device="cpu")
    return h.numpy()


def reference() -> np.ndarray:
    return np.triu(np.array([[4.0, 1.0, 0.0], [1.0, 5.0, 2.0], [0.0, 2.0, 6.0]]))[None]
