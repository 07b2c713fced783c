import numpy as np
import warp as wp


@wp.kernel
def _actuator_velocity(
    qvel_in: wp.array2d(dtype=float),
    actuator_moment_in: wp.array2d(dtype=float),
    actuator_velocity_out: wp.array2d(dtype=float),
):
    worldid, actid = wp.tid()
    actuator_velocity_out[worldid, actid] = actuator_moment_in[worldid, actid] * qvel_in[worldid, actid]


def run() -> np.ndarray:
    nworld, nu = 2, 3
    qvel = wp.array(np.full((nworld, nu), 2.0, dtype=np.float32), dtype=float, device="cpu")
    moment = wp.array(np.full((nworld, nu), 3.0, dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros((nworld, nu), dtype=float, device="cpu")
    wp.launch(_actuator_velocity, dim=(nworld, nu), inputs=[qvel, moment, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.full((2, 3), 6.0, dtype=np.float32)
