# real-bug: class=codegen warp=rejects
# source: https://github.com/NVIDIA/warp/issues/61
# why: `wp.zeros_like` is a host-side function: "Could not find function wp.zeros_like as a built-in or user-defined function"
import numpy as np
import warp as wp


@wp.func
def calc_force(rr_i: wp.vec3, ri: float) -> wp.vec3:
    force = wp.zeros_like(rr_i)
    force = force + rr_i * ri
    return force


@wp.kernel
def agent_forces(pos: wp.array(dtype=wp.vec3), radius: wp.array(dtype=float), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = calc_force(pos[i], radius[i])


def run() -> np.ndarray:
    pos = wp.array(np.ones((4, 3), dtype=np.float32), dtype=wp.vec3, device="cpu")
    radius = wp.array(np.full(4, 0.5, dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros(4, dtype=wp.vec3, device="cpu")
    wp.launch(agent_forces, dim=4, inputs=[pos, radius, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.full((4, 3), 0.5, dtype=np.float32)
