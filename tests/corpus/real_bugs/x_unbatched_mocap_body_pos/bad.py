# real-bug: class=extents warp=trap
# source: https://github.com/google-deepmind/mujoco_warp/pull/1193
# why: `body_pos` and `body_quat` are model fields shared by all worlds unless the user batches them (shape `(1, nbody)`), but `reset_mocap` reads them at `[worldid, bodyid]`: every world after the first reads past their end (found by the kernel analyzer's batched-field check; debug mode traps)
import numpy as np
import warp as wp


@wp.kernel
def reset_mocap(
    body_mocapid: wp.array(dtype=int),
    body_pos: wp.array2d(dtype=wp.vec3),
    body_quat: wp.array2d(dtype=wp.quat),
    mocap_pos_out: wp.array2d(dtype=wp.vec3),
    mocap_quat_out: wp.array2d(dtype=wp.quat),
):
    worldid, bodyid = wp.tid()
    mocapid = body_mocapid[bodyid]
    if mocapid >= 0:
        mocap_pos_out[worldid, mocapid] = body_pos[worldid, bodyid]
        mocap_quat_out[worldid, mocapid] = body_quat[worldid, bodyid]


def run() -> np.ndarray:
    nworld, nbody, nmocap = 3, 2, 1
    body_mocapid = wp.array(np.array([-1, 0], dtype=np.int32), dtype=int, device="cpu")
    # shared by all worlds
    body_pos = wp.array(np.array([[[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    body_quat = wp.array(
        np.array([[[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]], dtype=np.float32), dtype=wp.quat, device="cpu"
    )
    mocap_pos = wp.zeros((nworld, nmocap), dtype=wp.vec3, device="cpu")
    mocap_quat = wp.zeros((nworld, nmocap), dtype=wp.quat, device="cpu")
    wp.launch(
        reset_mocap,
        dim=(nworld, nbody),
        inputs=[body_mocapid, body_pos, body_quat],
        outputs=[mocap_pos, mocap_quat],
        device="cpu",
    )
    return np.concatenate([mocap_pos.numpy()[:, 0], mocap_quat.numpy()[:, 0]], axis=1)


def reference() -> np.ndarray:
    return np.tile(np.array([1.0, 2.0, 3.0, 0.0, 0.0, 1.0, 0.0]), (3, 1))
