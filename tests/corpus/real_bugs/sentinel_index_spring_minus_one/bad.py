# real-bug: class=sentinel-index warp=silent
# source: https://github.com/NVIDIA/warp/commit/37079d1fe5101ebf205f8f87f8ab6160e391b6d8
# why: spring endpoints of -1 mean "no particle", but the kernel indexes with them unchecked: Warp wraps -1 to the last particle (as numpy does), so a dangling spring pulls on an unrelated particle
import numpy as np
import warp as wp


@wp.kernel
def eval_springs(
    x: wp.array(dtype=wp.vec3),
    spring_indices: wp.array(dtype=int),
    spring_rest_lengths: wp.array(dtype=float),
    spring_stiffness: wp.array(dtype=float),
    f: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    i = spring_indices[tid * 2 + 0]
    j = spring_indices[tid * 2 + 1]
    ke = spring_stiffness[tid]
    rest = spring_rest_lengths[tid]
    xij = x[i] - x[j]
    l = wp.length(xij)
    dir = xij / l
    fs = dir * (ke * (l - rest))
    wp.atomic_sub(f, i, fs)
    wp.atomic_add(f, j, fs)


def run() -> np.ndarray:
    x = wp.array(np.array([[0, 0, 0], [2, 0, 0], [5, 0, 0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    # spring 1 lost its first particle (an open edge): -1 marks "no particle"
    indices = wp.array(np.array([0, 1, -1, 1], dtype=np.int32), dtype=int, device="cpu")
    rest = wp.array(np.array([1.0, 1.0], dtype=np.float32), dtype=float, device="cpu")
    ke = wp.array(np.array([10.0, 10.0], dtype=np.float32), dtype=float, device="cpu")
    f = wp.zeros(3, dtype=wp.vec3, device="cpu")
    wp.launch(eval_springs, dim=2, inputs=[x, indices, rest, ke, f], device="cpu")
    return f.numpy()


def reference() -> np.ndarray:
    return np.array([[10.0, 0, 0], [-10.0, 0, 0], [0, 0, 0]])
