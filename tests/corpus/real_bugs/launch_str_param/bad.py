# real-bug: class=codegen warp=rejects
# source: https://github.com/NVIDIA/warp/issues/84
# why: a `str` kernel parameter: the launch raises "unable to pack kernel parameter type <class 'str'> for param bc"
import numpy as np
import warp as wp


@wp.kernel
def apply_bc(u: wp.array(dtype=float), bc: str):
    i = wp.tid()
    if i == 0:
        u[i] = 0.0


def run() -> np.ndarray:
    u = wp.array(np.ones(4, dtype=np.float32), dtype=float, device="cpu")
    wp.launch(apply_bc, dim=4, inputs=[u, "dirichlet"], device="cpu")
    return u.numpy()


def reference() -> np.ndarray:
    return np.array([0.0, 1.0, 1.0, 1.0], dtype=np.float32)
