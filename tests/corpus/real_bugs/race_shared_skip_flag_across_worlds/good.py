import numpy as np
import warp as wp


@wp.kernel
def _geom_local_to_global(
    geom_bodyid: wp.array(dtype=int),
    geom_pos: wp.array2d(dtype=wp.vec3),
    xpos_in: wp.array2d(dtype=wp.vec3),
    geom_xpos_out: wp.array2d(dtype=wp.vec3),
):
    worldid, geomid = wp.tid()
    bodyid = geom_bodyid[geomid]
    if bodyid == 0:
        # static geom poses are set once, per world, when the data is made
        return
    geom_xpos_out[worldid, geomid] = xpos_in[worldid, bodyid] + geom_pos[worldid % geom_pos.shape[0], geomid]


def run() -> np.ndarray:
    nworld, ngeom = 2, 2
    geom_bodyid = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    pos = np.array([[[0, 0, 1], [0, 1, 0]]], dtype=np.float32)
    geom_pos = wp.array(pos, dtype=wp.vec3, device="cpu")
    xpos = wp.array(np.array([[[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [2, 0, 0]]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    static_pose = np.zeros((nworld, ngeom, 3), dtype=np.float32)
    static_pose[:, 0] = pos[0, 0]  # the world body sits at the origin in every world
    geom_xpos = wp.array(static_pose, dtype=wp.vec3, device="cpu")
    wp.launch(
        _geom_local_to_global,
        dim=(nworld, ngeom),
        inputs=[geom_bodyid, geom_pos, xpos],
        outputs=[geom_xpos],
        device="cpu",
    )
    return geom_xpos.numpy()


def reference() -> np.ndarray:
    return np.array([[[0, 0, 1], [1, 1, 0]], [[0, 0, 1], [2, 1, 0]]], dtype=np.float32)
