# real-bug: class=launch-tiled warp=gpu-only
# source: https://github.com/google-deepmind/mujoco_warp/pull/1246
# why: `wp.launch_tiled` of a kernel with no tile operation adds a block dimension: on a GPU every one of the block's threads runs the whole body (block_dim-fold redundant work, racing stores); the CPU forces block_dim=1, so the result there is right
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
    wp.launch_tiled(_actuator_velocity, dim=(nworld, nu), inputs=[qvel, moment, out], block_dim=32, device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.full((2, 3), 6.0, dtype=np.float32)
