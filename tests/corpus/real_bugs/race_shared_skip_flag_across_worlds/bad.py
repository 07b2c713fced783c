# real-bug: class=race warp=silent
# source: https://github.com/google-deepmind/mujoco_warp/pull/809
# why: a per-geom flag shared by all worlds (`geom_skip`, no world axis) is read and set by the threads of every world in the same launch: whichever world sets it first makes the other worlds skip the static geom's pose (on the CPU, worlds after the first keep a zero pose; on a GPU it depends on the schedule)
import numpy as np
import warp as wp


@wp.kernel
def _geom_local_to_global(
    geom_bodyid: wp.array(dtype=int),
    geom_pos: wp.array2d(dtype=wp.vec3),
    xpos_in: wp.array2d(dtype=wp.vec3),
    geom_skip_in: wp.array(dtype=bool),
    geom_xpos_out: wp.array2d(dtype=wp.vec3),
    geom_skip_out: wp.array(dtype=bool),
):
    worldid, geomid = wp.tid()
    bodyid = geom_bodyid[geomid]
    if not geom_skip_in[geomid]:
        # calculate only if necessary
        geom_xpos_out[worldid, geomid] = xpos_in[worldid, bodyid] + geom_pos[worldid % geom_pos.shape[0], geomid]
        if bodyid == 0:
            # static geom poses are calculated only once
            geom_skip_out[geomid] = True


def run() -> np.ndarray:
    nworld, ngeom = 2, 2
    geom_bodyid = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    geom_pos = wp.array(np.array([[[0, 0, 1], [0, 1, 0]]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    xpos = wp.array(np.array([[[0, 0, 0], [1, 0, 0]], [[0, 0, 0], [2, 0, 0]]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    geom_skip = wp.zeros(ngeom, dtype=bool, device="cpu")
    geom_xpos = wp.zeros((nworld, ngeom), dtype=wp.vec3, device="cpu")
    wp.launch(
        _geom_local_to_global,
        dim=(nworld, ngeom),
        inputs=[geom_bodyid, geom_pos, xpos, geom_skip],
        outputs=[geom_xpos, geom_skip],
        device="cpu",
    )
    return geom_xpos.numpy()


def reference() -> np.ndarray:
    return np.array([[[0, 0, 1], [1, 1, 0]], [[0, 0, 1], [2, 1, 0]]], dtype=np.float32)
