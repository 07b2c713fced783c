# real-bug: class=extents warp=silent
# source: https://github.com/google-deepmind/mujoco_warp/commit/0934504964f05ff025ada650dc95b799892fb44c
# why: the guard against the active constraint count is `efcid > nefc` instead of `>=`: the thread at `efcid == nefc` adds one stale row past the active range
import numpy as np
import warp as wp


@wp.kernel
def linesearch_iterative_init_p0(
    nefc_in: wp.array(dtype=int),
    efc_jv_in: wp.array2d(dtype=float),
    efc_quad_in: wp.array2d(dtype=float),
    p0_out: wp.array(dtype=float),
):
    worldid, efcid = wp.tid()
    if efcid > nefc_in[worldid]:
        return
    wp.atomic_add(p0_out, worldid, efc_jv_in[worldid, efcid] * efc_quad_in[worldid, efcid])


def run() -> np.ndarray:
    nworld, njmax = 2, 4
    nefc = wp.array(np.array([2, 3], dtype=np.int32), dtype=int, device="cpu")
    # rows past a world's active count hold stale values from an earlier step
    jv = wp.array(np.array([[1, 2, 9, 9], [1, 1, 1, 9]], dtype=np.float32), dtype=float, device="cpu")
    quad = wp.array(np.ones((nworld, njmax), dtype=np.float32), dtype=float, device="cpu")
    p0 = wp.zeros(nworld, dtype=float, device="cpu")
    wp.launch(linesearch_iterative_init_p0, dim=(nworld, njmax), inputs=[nefc, jv, quad], outputs=[p0], device="cpu")
    return p0.numpy()


def reference() -> np.ndarray:
    return np.array([3.0, 3.0])
