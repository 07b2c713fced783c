import numpy as np
import warp as wp


@wp.kernel
def _cacc_world(gravity: wp.array(dtype=wp.vec3), cacc_out: wp.array2d(dtype=wp.spatial_vector)):
    worldid = wp.tid()
    cacc_out[worldid, 0] = wp.spatial_vector(wp.vec3(0.0), -gravity[worldid % gravity.shape[0]])


def run() -> np.ndarray:
    nworld = 4
    gravity = wp.array(np.array([[0.0, 0.0, -9.81]], dtype=np.float32), dtype=wp.vec3, device="cpu")  # one for all
    cacc = wp.zeros((nworld, 2), dtype=wp.spatial_vector, device="cpu")
    wp.launch(_cacc_world, dim=nworld, inputs=[gravity, cacc], device="cpu")
    return cacc.numpy()[:, 0, 3:]


def reference() -> np.ndarray:
    return np.tile(np.array([0.0, 0.0, 9.81]), (4, 1))
