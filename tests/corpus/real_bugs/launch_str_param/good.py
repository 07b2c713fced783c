import numpy as np
import warp as wp

DIRICHLET = wp.constant(0)


@wp.kernel
def apply_bc(u: wp.array(dtype=float), bc: int):
    i = wp.tid()
    if i == 0 and bc == DIRICHLET:
        u[i] = 0.0


def run() -> np.ndarray:
    u = wp.array(np.ones(4, dtype=np.float32), dtype=float, device="cpu")
    wp.launch(apply_bc, dim=4, inputs=[u, 0], device="cpu")
    return u.numpy()


def reference() -> np.ndarray:
    return np.array([0.0, 1.0, 1.0, 1.0], dtype=np.float32)
