# real-bug: class=launch-rank warp=gpu-only
# source: https://github.com/newton-physics/newton/pull/2546
# why: the kernel takes one `wp.tid()` (a world) but is launched with `dim=joint_f.shape`, all three axes: Warp 1.19 hands each thread the first axis's index, so every world is worked `ndof` times (the same answer on the CPU, wasted threads on a GPU), and under the templated launch bounds of the Warp 1.13 nightlies the scalar tid became a flat index over all axes and read past the first one
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
    wp.launch(apply_forces_kernel, dim=joint_f.shape, inputs=[joint_q, joint_f], device="cpu")
    return joint_f.numpy()[:, 0, 0]


def reference() -> np.ndarray:
    return np.array([-20.0, 20.0, -20.0, 20.0])
