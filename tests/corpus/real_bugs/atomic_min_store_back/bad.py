# real-bug: class=atomics warp=silent
# source: https://github.com/OmniLRS/OmniLRS/pull/136
# why: `x[tid] = wp.atomic_min(x, tid, hi)` stores the returned *old* value back over the element the atomic just clamped: the clamp is undone
import numpy as np
import warp as wp


@wp.kernel
def get_coords(
    points: wp.array(dtype=wp.vec2f),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
    mpp: float,
    dem_shape: wp.vec2f,
):
    tid = wp.tid()
    x[tid] = points[tid][0] / mpp
    y[tid] = points[tid][1] / mpp
    x[tid] = wp.atomic_min(x, tid, dem_shape[0] - 1.0)
    y[tid] = wp.atomic_min(y, tid, dem_shape[1] - 1.0)
    x[tid] = wp.atomic_max(x, tid, 0.0)
    y[tid] = wp.atomic_max(y, tid, 0.0)


def run() -> np.ndarray:
    pts = wp.array(np.array([[50.0, -3.0], [2.0, 3.0]], dtype=np.float32), dtype=wp.vec2f, device="cpu")
    x = wp.zeros(2, dtype=float, device="cpu")
    y = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(get_coords, dim=2, inputs=[pts, x, y, 1.0, wp.vec2f(10.0, 10.0)], device="cpu")
    return np.array([x.numpy(), y.numpy()])


def reference() -> np.ndarray:
    return np.array([[9.0, 2.0], [0.0, 3.0]], dtype=np.float32)
