import numpy as np
import warp as wp


@wp.func
def _next_act(opt_timestep: float, actuator_actrange: wp.vec2, act_in: float, act_dot_in: float, clamp: bool) -> float:
    act = act_in + act_dot_in * opt_timestep
    if clamp:
        act = wp.clamp(act, actuator_actrange[0], actuator_actrange[1])
    return act


@wp.kernel
def _actuator_force(
    opt_timestep: float,
    actuator_actrange: wp.array2d(dtype=wp.vec2),
    act_in: wp.array2d(dtype=float),
    act_dot_in: wp.array2d(dtype=float),
    ctrl_act_out: wp.array2d(dtype=float),
):
    worldid, uid = wp.tid()
    actuator_actrange_id = worldid % actuator_actrange.shape[0]
    ctrl_act_out[worldid, uid] = _next_act(
        opt_timestep,
        actuator_actrange[actuator_actrange_id, uid],
        act_in[worldid, uid],
        act_dot_in[worldid, uid],
        True,
    )


def run() -> np.ndarray:
    nworld, nu = 3, 2
    actrange = wp.array(np.array([[[-1.0, 1.0], [0.0, 0.5]]], dtype=np.float32), dtype=wp.vec2, device="cpu")
    act = wp.array(np.full((nworld, nu), 0.4, dtype=np.float32), dtype=float, device="cpu")
    act_dot = wp.array(np.full((nworld, nu), 10.0, dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros((nworld, nu), dtype=float, device="cpu")
    wp.launch(_actuator_force, dim=(nworld, nu), inputs=[0.01, actrange, act, act_dot, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.tile(np.array([0.5, 0.5]), (3, 1))
