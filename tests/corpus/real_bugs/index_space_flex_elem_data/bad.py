# real-bug: class=index-space warp=trap
# source: https://github.com/google-deepmind/mujoco_warp/pull/1249
# why: the element's data address is computed from the global element id (`elemid * 3`) instead of the flex's own data address plus the element's index inside the flex; a preceding flex of another dimension shifts the layout and the read runs past the end
import numpy as np
import warp as wp


@wp.kernel
def _flex_narrowphase_dim2(
    nflex: int,
    flex_dim: wp.array(dtype=int),
    flex_elemadr: wp.array(dtype=int),
    flex_elemnum: wp.array(dtype=int),
    flex_elemdataadr: wp.array(dtype=int),
    flex_elem: wp.array(dtype=int),
    elem_vert_sum_out: wp.array(dtype=int),
):
    elemid = wp.tid()
    flexid = int(0)
    for i in range(nflex):
        if elemid >= flex_elemadr[i] and elemid < flex_elemadr[i] + flex_elemnum[i]:
            flexid = i
    if flex_dim[flexid] != 2:
        return
    elem_data_idx = elemid * 3
    v0_local = flex_elem[elem_data_idx]
    v1_local = flex_elem[elem_data_idx + 1]
    v2_local = flex_elem[elem_data_idx + 2]
    elem_vert_sum_out[elemid] = v0_local * 100 + v1_local * 10 + v2_local


def run() -> np.ndarray:
    # flex 0: a cable (dim 1, 2 vertices per element, 2 elements); flex 1: one triangle (dim 2)
    dim = wp.array(np.array([1, 2], dtype=np.int32), dtype=int, device="cpu")
    elemadr = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    elemnum = wp.array(np.array([2, 1], dtype=np.int32), dtype=int, device="cpu")
    elemdataadr = wp.array(np.array([0, 4], dtype=np.int32), dtype=int, device="cpu")
    elem = wp.array(np.array([0, 1, 1, 2, 3, 4, 5], dtype=np.int32), dtype=int, device="cpu")
    out = wp.zeros(3, dtype=int, device="cpu")
    wp.launch(
        _flex_narrowphase_dim2, dim=3, inputs=[2, dim, elemadr, elemnum, elemdataadr, elem, out], device="cpu"
    )
    return out.numpy()


def reference() -> np.ndarray:
    return np.array([0, 0, 345])
