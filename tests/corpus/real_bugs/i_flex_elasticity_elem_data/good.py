import numpy as np
import warp as wp


@wp.kernel
def _flex_elasticity(
    nflex: int,
    flex_dim: wp.array(dtype=int),
    flex_edgeadr: wp.array(dtype=int),
    flex_elemadr: wp.array(dtype=int),
    flex_elemnum: wp.array(dtype=int),
    flex_elemedgeadr: wp.array(dtype=int),
    flex_elemedge: wp.array(dtype=int),
    flexedge_length0: wp.array(dtype=float),
    rest_out: wp.array(dtype=float),
):
    elemid = wp.tid()
    f = int(0)
    for i in range(nflex):
        locid = elemid - flex_elemadr[i]
        if locid >= 0 and locid < flex_elemnum[i]:
            f = i
    dim = flex_dim[f]
    nvert = dim + 1
    nedge = nvert * (nvert - 1) / 2
    total = float(0.0)
    for e in range(nedge):
        idx = flex_elemedge[flex_elemedgeadr[f] + (elemid - flex_elemadr[f]) * nedge + e]
        total += flexedge_length0[flex_edgeadr[f] + idx]
    rest_out[elemid] = total


def run() -> np.ndarray:
    # flex 0: a cable (dim 1) of 2 elements, one edge each; flex 1: one triangle (dim 2), three edges
    i32 = np.int32
    args = [
        2,
        wp.array(np.array([1, 2], dtype=i32), dtype=int, device="cpu"),  # flex_dim
        wp.array(np.array([0, 2], dtype=i32), dtype=int, device="cpu"),  # flex_edgeadr
        wp.array(np.array([0, 2], dtype=i32), dtype=int, device="cpu"),  # flex_elemadr
        wp.array(np.array([2, 1], dtype=i32), dtype=int, device="cpu"),  # flex_elemnum
        wp.array(np.array([0, 2], dtype=i32), dtype=int, device="cpu"),  # flex_elemedgeadr
        wp.array(np.array([0, 1, 0, 1, 2], dtype=i32), dtype=int, device="cpu"),  # flex_elemedge (local ids)
        wp.array(np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32), dtype=float, device="cpu"),
    ]
    rest = wp.zeros(3, dtype=float, device="cpu")
    wp.launch(_flex_elasticity, dim=3, inputs=[*args, rest], device="cpu")
    return rest.numpy()


def reference() -> np.ndarray:
    return np.array([1.0, 2.0, 12.0], dtype=np.float32)
