import numpy as np
import warp as wp


@wp.kernel
def _equality_flex(
    flex_edgeadr: wp.array(dtype=int),
    flex_edgenum: wp.array(dtype=int),
    eq_obj1id: wp.array(dtype=int),
    eq_flex_adr: wp.array(dtype=int),
    flexedge_length: wp.array2d(dtype=float),
    flexedge_length0: wp.array(dtype=float),
    ne_out: wp.array(dtype=int),
    efc_pos_sum_out: wp.array(dtype=float),
):
    worldid, eqflexid, edgeid = wp.tid()
    eqid = eq_flex_adr[eqflexid]
    flexid = eq_obj1id[eqid]
    if edgeid < flex_edgeadr[flexid] or edgeid >= flex_edgeadr[flexid] + flex_edgenum[flexid]:
        return
    wp.atomic_add(ne_out, worldid, 1)
    wp.atomic_add(efc_pos_sum_out, worldid, flexedge_length[worldid, edgeid] - flexedge_length0[edgeid])


def run() -> np.ndarray:
    nworld, nflexedge = 1, 5
    # flex 0 owns edges 0..2, flex 1 owns edges 3..4; one equality constrains flex 1 only
    edgeadr = wp.array(np.array([0, 3], dtype=np.int32), dtype=int, device="cpu")
    edgenum = wp.array(np.array([3, 2], dtype=np.int32), dtype=int, device="cpu")
    eq_obj1id = wp.array(np.array([1], dtype=np.int32), dtype=int, device="cpu")
    eq_flex_adr = wp.array(np.array([0], dtype=np.int32), dtype=int, device="cpu")
    length = wp.array(np.array([[1.5, 1.5, 1.5, 2.5, 3.0]], dtype=np.float32), dtype=float, device="cpu")
    length0 = wp.array(np.array([1.0, 1.0, 1.0, 2.0, 2.0], dtype=np.float32), dtype=float, device="cpu")
    ne = wp.zeros(nworld, dtype=int, device="cpu")
    pos_sum = wp.zeros(nworld, dtype=float, device="cpu")
    wp.launch(
        _equality_flex,
        dim=(nworld, 1, nflexedge),
        inputs=[edgeadr, edgenum, eq_obj1id, eq_flex_adr, length, length0],
        outputs=[ne, pos_sum],
        device="cpu",
    )
    return np.concatenate([ne.numpy().astype(np.float64), pos_sum.numpy()])


def reference() -> np.ndarray:
    return np.array([2.0, 1.5])
