import numpy as np
import warp as wp


@wp.kernel
def furthest_neighbour(
    vert: wp.array(dtype=wp.vec3),
    edge_adr: wp.array(dtype=int),
    edge_localid: wp.array(dtype=int),
    start: wp.array(dtype=int),
    best_out: wp.array(dtype=int),
):
    tid = wp.tid()
    v = start[tid]
    a = vert[v]
    best = float(-1.0)
    imax = int(-1)
    i = edge_adr[v]
    while edge_localid[i] >= 0:
        idx = edge_localid[i]
        ap = a - vert[idx]
        dist = wp.length_sq(ap)
        if dist > best:
            best = dist
            imax = idx
        i += 1
    best_out[tid] = imax


def run() -> np.ndarray:
    # a square 0-1-2-3 among 12 vertices of the mesh; each vertex's neighbour list ends with -1
    points = np.zeros((12, 3), dtype=np.float32)
    points[:4] = [[0, 0, 0], [1, 0, 0], [1, 2, 0], [0, 2, 0]]
    vert = wp.array(points, dtype=wp.vec3, device="cpu")
    edge_adr = wp.array(np.array([0, 3, 6, 9], dtype=np.int32), dtype=int, device="cpu")
    edges = np.array([1, 3, -1, 0, 2, -1, 1, 3, -1, 0, 2, -1], dtype=np.int32)
    edge_localid = wp.array(edges, dtype=int, device="cpu")
    start = wp.array(np.array([0, 1], dtype=np.int32), dtype=int, device="cpu")
    best = wp.zeros(2, dtype=int, device="cpu")
    wp.launch(furthest_neighbour, dim=2, inputs=[vert, edge_adr, edge_localid, start, best], device="cpu")
    return best.numpy()


def reference() -> np.ndarray:
    return np.array([3, 2])
