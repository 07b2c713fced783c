import numpy as np
import warp as wp


@wp.kernel
def get_aabb(points: wp.array(dtype=wp.vec3), lower: wp.array(dtype=float), upper: wp.array(dtype=float)):
    tid = wp.tid()
    for i in range(points.shape[0]):
        lower[tid] = wp.min(lower[tid], points[i][tid])
        upper[tid] = wp.max(upper[tid], points[i][tid])


def run() -> np.ndarray:
    aabb_lower = wp.array(np.full(3, np.inf, dtype=np.float32), dtype=float, device="cpu")
    aabb_upper = wp.array(np.full(3, -np.inf, dtype=np.float32), dtype=float, device="cpu")
    points = wp.array([[-1.0, 1.0, -1.0], [1.0, -2.0, 0.0]], dtype=wp.vec3, device="cpu")
    wp.launch(get_aabb, dim=3, inputs=[points, aabb_lower, aabb_upper], device="cpu")
    return np.array([aabb_lower.numpy(), aabb_upper.numpy()])


def reference() -> np.ndarray:
    return np.array([[-1.0, -2.0, -1.0], [1.0, 1.0, 0.0]], dtype=np.float32)
