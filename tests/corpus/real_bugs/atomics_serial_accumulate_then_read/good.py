import numpy as np
import warp as wp


@wp.kernel
def eval_rigid_tau(
    articulation_start: wp.array(dtype=int),
    joint_parent: wp.array(dtype=int),
    body_f_ext: wp.array(dtype=wp.vec3),
    body_ft_s: wp.array(dtype=wp.vec3),
    tau: wp.array(dtype=float),
):
    # one thread walks one articulation from its leaves back to its root
    art = wp.tid()
    start = articulation_start[art]
    end = articulation_start[art + 1]
    count = end - start
    for offset in range(count):
        i = end - offset - 1
        f_s = body_ft_s[i] + body_f_ext[i]
        tau[i] = f_s[2]
        parent = joint_parent[i]
        if parent >= 0:
            body_ft_s[parent] = body_ft_s[parent] + f_s


def run() -> np.ndarray:
    # a chain of three links 0 <- 1 <- 2, each pushed by 10 along z
    starts = wp.array(np.array([0, 3], dtype=np.int32), dtype=int, device="cpu")
    parent = wp.array(np.array([-1, 0, 1], dtype=np.int32), dtype=int, device="cpu")
    f_ext = wp.array(np.tile(np.array([0, 0, 10], dtype=np.float32), (3, 1)), dtype=wp.vec3, device="cpu")
    ft = wp.zeros(3, dtype=wp.vec3, device="cpu")
    tau = wp.zeros(3, dtype=float, device="cpu")
    wp.launch(eval_rigid_tau, dim=1, inputs=[starts, parent, f_ext, ft, tau], device="cpu")
    return tau.numpy()


def reference() -> np.ndarray:
    return np.array([30.0, 20.0, 10.0])
