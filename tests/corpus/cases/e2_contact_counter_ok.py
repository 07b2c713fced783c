# corpus: expect= warp=ok
"""Ground contacts counted the right way (an array and an atomic), with a scalar parameter clamped and
reused as a local, which is fine."""

import warp as wp


@wp.struct
class GroundPlane:
    normal: wp.vec3
    offset: float
    margin: float


@wp.func
def plane_distance(p: wp.vec3, plane: GroundPlane) -> float:
    return wp.dot(p, plane.normal) - plane.offset


@wp.kernel
def detect_ground_contacts(
    positions: wp.array(dtype=wp.vec3),
    radii: wp.array(dtype=float),
    plane: GroundPlane,
    max_contacts: int,
    contact_ids: wp.array(dtype=int),
    contact_count: wp.array(dtype=int),
):
    tid = wp.tid()
    max_contacts = wp.min(max_contacts, contact_ids.shape[0])
    d = plane_distance(positions[tid], plane) - radii[tid]
    if d < plane.margin:
        slot = wp.atomic_add(contact_count, 0, 1)
        if slot < max_contacts:
            contact_ids[slot] = tid


def detect(positions: wp.array, radii: wp.array, plane: GroundPlane, contact_ids: wp.array) -> int:
    count = wp.zeros(1, dtype=int, device=positions.device)
    wp.launch(
        detect_ground_contacts,
        dim=positions.shape[0],
        inputs=[positions, radii, plane, contact_ids.shape[0], contact_ids, count],
        device=positions.device,
    )
    return int(count.numpy()[0])
