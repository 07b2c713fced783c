# corpus: expect=WH011 warp=silent
"""Mesh vertex normals normalised over `len(verts) + 1` threads ("room for the sentinel vertex"), but the
normal buffer wraps exactly the vertices: the last thread reads and writes past the end."""

import numpy as np
import warp as wp


@wp.kernel
def normalize_normals(normals: wp.array(dtype=wp.vec3)):
    vid = wp.tid()
    nrm = normals[vid]
    length = wp.length(nrm)
    if length > 1.0e-8:
        normals[vid] = nrm / length


def finalize_normals(verts: np.ndarray):
    normals = wp.array(np.zeros_like(verts), dtype=wp.vec3)
    wp.launch(normalize_normals, dim=len(verts) + 1, inputs=[normals])
    return normals
