import numpy as np
import warp as wp


@wp.kernel
def _transmission(
    actuator_gear: wp.array2d(dtype=float),
    actuator_trnid: wp.array(dtype=int),
    qpos_in: wp.array2d(dtype=float),
    actuator_length_out: wp.array2d(dtype=float),
):
    worldid, actid = wp.tid()
    actuator_gear_id = worldid % actuator_gear.shape[0]
    gear = actuator_gear[actuator_gear_id, actid]
    qpos = qpos_in[worldid]
    jntid = actuator_trnid[actid]
    actuator_length_out[worldid, actid] = gear * qpos[jntid]


def run() -> np.ndarray:
    nworld, nu = 3, 2
    gear = wp.array(np.array([[2.0, -1.0]], dtype=np.float32), dtype=float, device="cpu")  # shared by all worlds
    trnid = wp.array(np.array([1, 0], dtype=np.int32), dtype=int, device="cpu")
    qpos = wp.array(np.arange(6, dtype=np.float32).reshape(3, 2), dtype=float, device="cpu")
    length = wp.zeros((nworld, nu), dtype=float, device="cpu")
    wp.launch(_transmission, dim=(nworld, nu), inputs=[gear, trnid, qpos, length], device="cpu")
    return length.numpy()


def reference() -> np.ndarray:
    qpos = np.arange(6.0).reshape(3, 2)
    return np.stack([2.0 * qpos[:, 1], -1.0 * qpos[:, 0]], axis=1)
