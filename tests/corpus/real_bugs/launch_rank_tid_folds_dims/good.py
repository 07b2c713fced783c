import numpy as np
import warp as wp


@wp.kernel
def apply_forces_kernel(joint_q: wp.array3d(dtype=float), joint_f: wp.array3d(dtype=float)):
    tid = wp.tid()
    if joint_q[tid, 0, 0] > 0.0:
        joint_f[tid, 0, 0] = -20.0
    else:
        joint_f[tid, 0, 0] = 20.0


def run() -> np.ndarray:
    num_worlds, dofs = 4, 3
    q = np.zeros((num_worlds, 1, dofs), dtype=np.float32)
    q[::2, 0, 0] = 1.0
    joint_q = wp.array(q, dtype=float, device="cpu")
    joint_f = wp.zeros((num_worlds, 1, dofs), dtype=float, device="cpu")
    wp.launch(apply_forces_kernel, dim=joint_f.shape[0], inputs=[joint_q, joint_f], device="cpu")
    return joint_f.numpy()[:, 0, 0]


def reference() -> np.ndarray:
    return np.array([-20.0, 20.0, -20.0, 20.0])
