# corpus: expect=WH024 warp=silent
"""Laplacian smoothing of vertex positions over a CSR adjacency. The neighbour loop reuses `v`, the
vertex's thread index, as its loop variable, so the smoothed position is written to the last neighbour
slot's index for every vertex instead of to the vertex itself."""

import warp as wp


@wp.struct
class Adjacency:
    offsets: wp.array(dtype=int)
    neighbors: wp.array(dtype=int)


@wp.func
def blend(a: wp.vec3, b: wp.vec3, alpha: float) -> wp.vec3:
    return a * (1.0 - alpha) + b * alpha


@wp.kernel
def smooth_vertices(
    adj: Adjacency, points: wp.array(dtype=wp.vec3), alpha: float, smoothed: wp.array(dtype=wp.vec3)
):
    v = wp.tid()
    start = adj.offsets[v]
    end = adj.offsets[v + 1]
    p = points[v]
    centroid = wp.vec3(0.0)
    for v in range(start, end):
        centroid += points[adj.neighbors[v]]
    count = end - start
    if count > 0:
        smoothed[v] = blend(p, centroid / float(count), alpha)
    else:
        smoothed[v] = p


def smooth(adj: Adjacency, points: wp.array, alpha: float, iterations: int = 4) -> wp.array:
    src = wp.clone(points)
    dst = wp.empty_like(points)
    for _ in range(iterations):
        wp.launch(smooth_vertices, dim=points.shape[0], inputs=[adj, src, alpha, dst], device=points.device)
        src, dst = dst, src
    return src
