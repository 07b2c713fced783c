import numpy as np
import warp as wp


@wp.kernel
def _actuator_force(
    act_slots: wp.array(dtype=wp.vec2i),
    act_in: wp.array2d(dtype=float),
    gainprm: wp.array(dtype=float),
    force_out: wp.array2d(dtype=float),
):
    worldid, uid = wp.tid()
    slots = act_slots[uid]
    adr = slots[0]
    temperature = act_in[worldid, adr]
    adr += 1

    # integral
    x_I = 0.0
    if slots[1] >= 0:
        x_I = act_in[worldid, adr]
        adr += 1

    bristle = act_in[worldid, adr]
    force_out[worldid, uid] = gainprm[uid] * (temperature + x_I) + bristle


def run() -> np.ndarray:
    slots = wp.array(np.array([[0, -1], [0, -1]], dtype=np.int32), dtype=wp.vec2i, device="cpu")
    act = wp.array(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32), dtype=float, device="cpu")
    gain = wp.array(np.array([1.0, 2.0], dtype=np.float32), dtype=float, device="cpu")
    out = wp.zeros((2, 2), dtype=float, device="cpu")
    wp.launch(_actuator_force, dim=(2, 2), inputs=[slots, act, gain, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    # no integral slot: x_I = 0, bristle is act[1]
    return np.array([[1.0 + 2.0, 2.0 + 2.0], [4.0 + 5.0, 8.0 + 5.0]], dtype=np.float32)
