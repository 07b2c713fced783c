import numpy as np
import warp as wp


@wp.kernel
def _flex_bending(
    nflex: int,
    body_dofadr: wp.array(dtype=int),
    flex_vertadr: wp.array(dtype=int),
    flex_edgeadr: wp.array(dtype=int),
    flex_edgenum: wp.array(dtype=int),
    flex_vertbodyid: wp.array(dtype=int),
    flex_edge: wp.array(dtype=wp.vec2i),
    qfrc_spring_out: wp.array2d(dtype=float),
):
    worldid, edgeid = wp.tid()
    f = int(0)
    for i in range(nflex):
        locid = edgeid - flex_edgeadr[i]
        if locid >= 0 and locid < flex_edgenum[i]:
            f = i
    v = wp.vec2i(flex_vertadr[f] + flex_edge[edgeid][0], flex_vertadr[f] + flex_edge[edgeid][1])
    for i in range(2):
        bodyid = flex_vertbodyid[v[i]]
        wp.atomic_add(qfrc_spring_out, worldid, body_dofadr[bodyid], float(i + 1))


def run() -> np.ndarray:
    # two flexes of 2 vertices and one edge each; vertices 0..3 belong to bodies 0..3
    body_dofadr = wp.array(np.array([0, 1, 2, 3], dtype=np.int32), dtype=int, device="cpu")
    vertadr = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    edgeadr = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    edgenum = wp.array(np.array([1, 1], dtype=np.int32), dtype=int, device="cpu")
    vertbodyid = wp.array(np.array([0, 1, 2, 3], dtype=np.int32), dtype=int, device="cpu")
    edge = wp.array(np.array([[0, 1], [0, 1]], dtype=np.int32), dtype=wp.vec2i, device="cpu")
    qfrc = wp.zeros((1, 4), dtype=float, device="cpu")
    wp.launch(
        _flex_bending,
        dim=(1, 2),
        inputs=[2, body_dofadr, vertadr, edgeadr, edgenum, vertbodyid, edge, qfrc],
        device="cpu",
    )
    return qfrc.numpy()


def reference() -> np.ndarray:
    return np.array([[1.0, 2.0, 1.0, 2.0]])
