# real-bug: class=by-value warp=silent
# source: https://github.com/NVIDIA/warp/issues/541
# why: `lower` and `upper` are wp.vec3 parameters, passed by value: the component writes never reach the host
import numpy as np
import warp as wp


@wp.kernel
def get_aabb(points: wp.array(dtype=wp.vec3), lower: wp.vec3, upper: wp.vec3):
    tid = wp.tid()
    for i in range(points.shape[0]):
        lower[tid] = wp.min(lower[tid], points[i][tid])
        upper[tid] = wp.max(upper[tid], points[i][tid])


def run() -> np.ndarray:
    aabb_lower = wp.vec3(wp.inf, wp.inf, wp.inf)
    aabb_upper = wp.vec3(-wp.inf, -wp.inf, -wp.inf)
    points = wp.array([[-1.0, 1.0, -1.0], [1.0, -2.0, 0.0]], dtype=wp.vec3, device="cpu")
    wp.launch(get_aabb, dim=3, inputs=[points, aabb_lower, aabb_upper], device="cpu")
    return np.array([list(aabb_lower), list(aabb_upper)])


def reference() -> np.ndarray:
    return np.array([[-1.0, -2.0, -1.0], [1.0, 1.0, 0.0]], dtype=np.float32)
