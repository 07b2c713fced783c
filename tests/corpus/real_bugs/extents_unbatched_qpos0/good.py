import numpy as np
import warp as wp


@wp.kernel
def _efc_equality_joint(
    qpos0: wp.array2d(dtype=float),
    jnt_qposadr: wp.array(dtype=int),
    eq_obj1id: wp.array(dtype=int),
    eq_obj2id: wp.array(dtype=int),
    qpos_in: wp.array2d(dtype=float),
    efc_pos_out: wp.array2d(dtype=float),
):
    worldid, eqid = wp.tid()
    qpos0_id = worldid % qpos0.shape[0]
    qposadr1 = jnt_qposadr[eq_obj1id[eqid]]
    qposadr2 = jnt_qposadr[eq_obj2id[eqid]]
    dif = qpos_in[worldid, qposadr2] - qpos0[qpos0_id, qposadr2]
    pos = qpos_in[worldid, qposadr1] - qpos0[qpos0_id, qposadr1] - dif
    efc_pos_out[worldid, eqid] = pos


def run() -> np.ndarray:
    nworld = 3
    qpos0 = wp.array(np.array([[0.1, 0.2]], dtype=np.float32), dtype=float, device="cpu")  # shared by all worlds
    qposadr = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    obj1 = wp.array(np.array([0], dtype=np.int32), dtype=int, device="cpu")
    obj2 = wp.array(np.array([1], dtype=np.int32), dtype=int, device="cpu")
    qpos = wp.array(np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 4.0]], dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros((nworld, 1), dtype=float, device="cpu")
    wp.launch(_efc_equality_joint, dim=(nworld, 1), inputs=[qpos0, qposadr, obj1, obj2, qpos, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    qpos0 = np.array([0.1, 0.2])
    qpos = np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 4.0]])
    return ((qpos[:, 0] - qpos0[0]) - (qpos[:, 1] - qpos0[1]))[:, None]
