# corpus: expect=WH010,WH010,WH010 warp=silent
"""Area-weighted vertex normals: each triangle adds its normal to its three vertices with a plain
read-modify-write through `wp.vec3i` connectivity. A vertex belongs to about six triangles, so on a
GPU most of its contributions are lost."""

import warp as wp


@wp.func
def face_normal(a: wp.vec3, b: wp.vec3, c: wp.vec3) -> wp.vec3:
    return wp.cross(b - a, c - a)


@wp.kernel
def accumulate_vertex_normals(
    points: wp.array(dtype=wp.vec3),
    tris: wp.array(dtype=wp.vec3i),
    normals: wp.array(dtype=wp.vec3),
):
    t = wp.tid()
    tri = tris[t]
    n = face_normal(points[tri[0]], points[tri[1]], points[tri[2]])
    normals[tri[0]] = normals[tri[0]] + n
    normals[tri[1]] = normals[tri[1]] + n
    normals[tri[2]] = normals[tri[2]] + n


@wp.kernel
def normalize_normals(normals: wp.array(dtype=wp.vec3)):
    v = wp.tid()
    normals[v] = wp.normalize(normals[v])


class SurfaceMesh:
    def __init__(self, points: wp.array, tris: wp.array):
        self.points = points
        self.tris = tris
        self.normals = wp.zeros_like(points)

    def update_normals(self):
        self.normals.zero_()
        wp.launch(accumulate_vertex_normals, dim=self.tris.shape[0], inputs=[self.points, self.tris, self.normals])
        wp.launch(normalize_normals, dim=self.points.shape[0], inputs=[self.normals])
