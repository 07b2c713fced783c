# real-bug: class=arg-order warp=silent
# source: https://github.com/NVIDIA/warp/issues/1143
# why: the kernel declares `lr, weight_decay, momentum, damping` but the launch passes `lr, momentum, dampening, weight_decay` (all floats): momentum is used as weight decay, dampening as momentum (so momentum is off) and weight decay as dampening
import numpy as np
import warp as wp


@wp.kernel
def sgd_step_kernel(
    g: wp.array(dtype=float),
    b: wp.array(dtype=float),
    lr: float,
    weight_decay: float,
    momentum: float,
    damping: float,
    nesterov: int,
    t: int,
    params: wp.array(dtype=float),
):
    i = wp.tid()
    gt = g[i]
    if weight_decay != 0.0:
        gt += weight_decay * params[i]
    if momentum != 0.0:
        bt = b[i]
        if t > 0:
            bt = momentum * bt + (1.0 - damping) * gt
        else:
            bt = gt
        if nesterov == 1:
            gt += momentum * bt
        else:
            gt = bt
        b[i] = bt
    params[i] = params[i] - lr * gt


def run() -> np.ndarray:
    lr, momentum, dampening, weight_decay = 0.1, 0.9, 0.0, 0.01
    params = wp.array(np.array([1.0, -2.0], dtype=np.float32), dtype=float, device="cpu")
    g = wp.array(np.array([0.5, 0.5], dtype=np.float32), dtype=float, device="cpu")
    b = wp.array(np.array([1.0, 1.0], dtype=np.float32), dtype=float, device="cpu")
    kernel_inputs = [g, b, lr, momentum, dampening, weight_decay, 0, 1, params]
    wp.launch(kernel=sgd_step_kernel, dim=len(params), inputs=kernel_inputs, device="cpu")
    return params.numpy()


def reference() -> np.ndarray:
    p = np.array([1.0, -2.0])
    gt = 0.5 + 0.01 * p
    bt = 0.9 * 1.0 + gt
    return p - 0.1 * bt
