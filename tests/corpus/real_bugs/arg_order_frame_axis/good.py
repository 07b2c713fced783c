import numpy as np
import warp as wp


@wp.func
def _frame_axis(
    xmat_in: wp.array2d(dtype=wp.mat33),
    ximat_in: wp.array2d(dtype=wp.mat33),
    worldid: int,
    objid: int,
    objtype: int,
    axis: int,
) -> wp.vec3:
    if objtype == 0:
        xmat = xmat_in[worldid, objid]
    else:
        xmat = ximat_in[worldid, objid]
    return wp.vec3(xmat[0, axis], xmat[1, axis], xmat[2, axis])


@wp.kernel
def _sensor_pos(
    xmat_in: wp.array2d(dtype=wp.mat33),
    ximat_in: wp.array2d(dtype=wp.mat33),
    sensor_objtype: wp.array(dtype=int),
    out: wp.array2d(dtype=wp.vec3),
):
    worldid, sensorid = wp.tid()
    objtype = sensor_objtype[sensorid]
    out[worldid, sensorid] = _frame_axis(xmat_in, ximat_in, worldid, 0, objtype, 2)


def run() -> np.ndarray:
    xmat = wp.array(np.tile(np.eye(3, dtype=np.float32), (1, 1, 1, 1)), dtype=wp.mat33, device="cpu")
    ximat = wp.array(np.tile(2.0 * np.eye(3, dtype=np.float32), (1, 1, 1, 1)), dtype=wp.mat33, device="cpu")
    objtype = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    out = wp.zeros((1, 2), dtype=wp.vec3, device="cpu")
    wp.launch(_sensor_pos, dim=(1, 2), inputs=[xmat, ximat, objtype, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.array([[[0.0, 0.0, 1.0], [0.0, 0.0, 2.0]]], dtype=np.float32)
