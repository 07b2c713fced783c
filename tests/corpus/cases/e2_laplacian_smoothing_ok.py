# corpus: expect= warp=ok
"""Laplacian smoothing done right: the active-vertex indirection rebinds the thread index on purpose
(`v = active[v]`, then used consistently) and the neighbour loop has its own variable."""

import warp as wp


@wp.struct
class Adjacency:
    offsets: wp.array(dtype=int)
    neighbors: wp.array(dtype=int)


@wp.func
def blend(a: wp.vec3, b: wp.vec3, alpha: float) -> wp.vec3:
    return a * (1.0 - alpha) + b * alpha


@wp.kernel
def smooth_active_vertices(
    adj: Adjacency,
    active: wp.array(dtype=int),
    points: wp.array(dtype=wp.vec3),
    alpha: float,
    smoothed: wp.array(dtype=wp.vec3),
):
    v = wp.tid()
    v = active[v]
    start = adj.offsets[v]
    end = adj.offsets[v + 1]
    centroid = wp.vec3(0.0)
    for e in range(start, end):
        centroid += points[adj.neighbors[e]]
    count = end - start
    if count > 0:
        smoothed[v] = blend(points[v], centroid / float(count), alpha)
    else:
        smoothed[v] = points[v]


def smooth(adj: Adjacency, active: wp.array, points: wp.array, alpha: float) -> wp.array:
    out = wp.clone(points)
    wp.launch(
        smooth_active_vertices,
        dim=active.shape[0],
        inputs=[adj, active, points, alpha, out],
        device=points.device,
    )
    return out
