# corpus: expect= warp=ok
"""Reordering particle data after a hash-grid sort, and a per-body update through an ownership map:
read-modify-writes through loaded indices that are permutations (each thread its own element), plus
a one-thread-per-vertex guarded update. Correct code that a rule must leave alone."""

import numpy as np
import warp as wp


@wp.struct
class Particles:
    x: wp.array(dtype=wp.vec3)
    v: wp.array(dtype=wp.vec3)
    sorted_to_original: wp.array(dtype=int)


@wp.kernel
def apply_sorted_impulses(p: Particles, impulses: wp.array(dtype=wp.vec3), dt: float):
    s = wp.tid()
    i = p.sorted_to_original[s]
    p.v[i] = p.v[i] + impulses[s] * dt
    p.x[i] = p.x[i] + p.v[i] * dt


@wp.kernel
def relax_owned_vertices(
    edges: wp.array2d(dtype=int),
    vertex_owner: wp.array(dtype=int),
    correction: wp.array(dtype=wp.vec3),
    x: wp.array(dtype=wp.vec3),
):
    e = wp.tid()
    j = edges[e, 1]
    if vertex_owner[j] == e:
        x[j] = x[j] + correction[e]


def run():
    n = 64
    p = Particles()
    p.x = wp.zeros(n, dtype=wp.vec3, device="cpu")
    p.v = wp.zeros(n, dtype=wp.vec3, device="cpu")
    p.sorted_to_original = wp.array(np.random.default_rng(3).permutation(n).astype(np.int32), device="cpu")
    impulses = wp.ones(n, dtype=wp.vec3, device="cpu")
    wp.launch(apply_sorted_impulses, dim=n, inputs=[p, impulses, 0.01], device="cpu")
    edges = wp.array(np.stack([np.arange(n), (np.arange(n) + 1) % n], axis=1).astype(np.int32), device="cpu")
    owner = wp.array(((np.arange(n) - 1) % n).astype(np.int32), device="cpu")
    wp.launch(relax_owned_vertices, dim=n, inputs=[edges, owner, wp.ones(n, dtype=wp.vec3, device="cpu"), p.x],
              device="cpu")
