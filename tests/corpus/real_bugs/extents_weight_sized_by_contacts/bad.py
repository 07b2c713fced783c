# real-bug: class=extents warp=trap
# source: https://github.com/newton-physics/newton/pull/1425
# why: the per-body contact weights are allocated `zeros_like` a per-contact array (2 contacts) but accumulated at body indices (4 bodies): the atomic add writes past the end
import numpy as np
import warp as wp


@wp.kernel
def count_contact_weights(
    contact_shape0: wp.array(dtype=int),
    contact_shape1: wp.array(dtype=int),
    shape_body: wp.array(dtype=int),
    contact_inv_weight: wp.array(dtype=float),
):
    tid = wp.tid()
    body_a = shape_body[contact_shape0[tid]]
    body_b = shape_body[contact_shape1[tid]]
    if body_a >= 0:
        wp.atomic_add(contact_inv_weight, body_a, 1.0)
    if body_b >= 0:
        wp.atomic_add(contact_inv_weight, body_b, 1.0)


def run() -> np.ndarray:
    body_count = 4
    contact_shape0 = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    contact_shape1 = wp.array(np.array([1, 3], dtype=np.int32), dtype=int, device="cpu")
    contact_thickness0 = wp.zeros(2, dtype=float, device="cpu")
    shape_body = wp.array(np.array([0, 1, 2, 3], dtype=np.int32), dtype=int, device="cpu")
    rigid_contact_inv_weight = wp.zeros_like(contact_thickness0)
    assert contact_thickness0.shape[0] == 2
    wp.launch(
        count_contact_weights,
        dim=2,
        inputs=[contact_shape0, contact_shape1, shape_body, rigid_contact_inv_weight],
        device="cpu",
    )
    return rigid_contact_inv_weight.numpy()


def reference() -> np.ndarray:
    return np.ones(4)
