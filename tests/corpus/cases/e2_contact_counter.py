# corpus: expect=WH023 warp=silent
"""Ground contacts of a particle system: the kernel counts contacts into a scalar `int` parameter, as if
it were an output. Kernel arguments are passed by value: the host's count stays 0."""

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
    contact_depth: wp.array(dtype=float),
    contact_count: int,
):
    tid = wp.tid()
    d = plane_distance(positions[tid], plane) - radii[tid]
    if d < plane.margin:
        contact_depth[tid] = -d
        contact_count += 1
    else:
        contact_depth[tid] = 0.0


class ContactDetector:
    def __init__(self, plane: GroundPlane):
        self.plane = plane
        self.contact_count = 0

    def detect(self, positions: wp.array, radii: wp.array, depth: wp.array) -> int:
        wp.launch(
            detect_ground_contacts,
            dim=positions.shape[0],
            inputs=[positions, radii, self.plane, depth, self.contact_count],
            device=positions.device,
        )
        return self.contact_count
