import numpy as np
import warp as wp

NULL_ELEMENT_INDEX = wp.constant(-1)
OUTSIDE = wp.constant(-1.0e8)


@wp.func
def cell_lookup(cell_size: float, res: int, pos: wp.vec3) -> int:
    i = int(wp.floor(pos[0] / cell_size))
    if i < 0 or i >= res:
        return NULL_ELEMENT_INDEX
    return i


@wp.kernel
def bin_particles(
    cell_origin: wp.array(dtype=wp.vec3),
    cell_size: float,
    positions: wp.array(dtype=wp.vec3),
    cell_index: wp.array(dtype=int),
    cell_coords: wp.array(dtype=wp.vec3),
):
    p = wp.tid()
    element_index = cell_lookup(cell_size, cell_origin.shape[0], positions[p])
    cell_index[p] = element_index
    if element_index == NULL_ELEMENT_INDEX:
        cell_coords[p] = wp.vec3(OUTSIDE)
    else:
        cell_coords[p] = (positions[p] - cell_origin[element_index]) / cell_size


def run() -> np.ndarray:
    origins = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], dtype=np.float32)
    cell_origin = wp.array(origins, dtype=wp.vec3, device="cpu")
    # the last particle left the grid
    pos = wp.array(np.array([[0.5, 0, 0], [2.25, 0, 0], [-0.5, 0, 0]], dtype=np.float32), dtype=wp.vec3, device="cpu")
    cell_index = wp.zeros(3, dtype=int, device="cpu")
    coords = wp.zeros(3, dtype=wp.vec3, device="cpu")
    wp.launch(bin_particles, dim=3, inputs=[cell_origin, 1.0, pos, cell_index, coords], device="cpu")
    return coords.numpy()[:, 0]


def reference() -> np.ndarray:
    return np.array([0.5, 0.25, -1.0e8])
