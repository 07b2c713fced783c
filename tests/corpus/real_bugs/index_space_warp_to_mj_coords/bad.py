# real-bug: class=index-space warp=silent
# source: https://github.com/newton-physics/newton/pull/2332
# why: `joint_type[jntid]` and `joint_child[jntid]` use the per-world joint id on model-wide arrays; the joint's flat index is `joints_per_world * worldid + jntid`, used two lines above for `joint_q_start`
import numpy as np
import warp as wp


@wp.kernel
def convert_warp_coords_to_mj_kernel(
    joints_per_world: int,
    joint_type: wp.array(dtype=int),
    joint_child: wp.array(dtype=int),
    joint_q_start: wp.array(dtype=int),
    joint_q: wp.array(dtype=float),
    body_scale: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
):
    worldid, jntid = wp.tid()
    wq_i = joint_q_start[joints_per_world * worldid + jntid]
    type = joint_type[jntid]
    child = joint_child[jntid]
    if type == 1:
        qpos[worldid, jntid] = joint_q[wq_i] * body_scale[child]
    else:
        qpos[worldid, jntid] = joint_q[wq_i]


def run() -> np.ndarray:
    jtype = wp.array(np.array([0, 0, 1, 1], dtype=np.int32), dtype=int, device="cpu")
    child = wp.array(np.array([0, 1, 2, 3], dtype=np.int32), dtype=int, device="cpu")
    q_start = wp.array(np.arange(4, dtype=np.int32), dtype=int, device="cpu")
    q = wp.array(np.ones(4, dtype=np.float32), dtype=float, device="cpu")
    scale = wp.array(np.array([1.0, 1.0, 3.0, 5.0], dtype=np.float32), dtype=float, device="cpu")
    qpos = wp.zeros((2, 2), dtype=float, device="cpu")
    wp.launch(
        convert_warp_coords_to_mj_kernel, dim=(2, 2), inputs=[2, jtype, child, q_start, q, scale, qpos], device="cpu"
    )
    return qpos.numpy()


def reference() -> np.ndarray:
    return np.array([[1.0, 1.0], [3.0, 5.0]], dtype=np.float32)
