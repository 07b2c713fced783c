# corpus: expect= warp=ok
"""A deformable body whose state comes from a NumPy mesh: every array is converted to the kernel's
type where it is made (`dtype=wp.vec3`, `astype(np.float32)`), dims are integers, rows of the 2-D
element table are used as views."""

import numpy as np
import warp as wp


@wp.func
def tet_volume(x: wp.array(dtype=wp.vec3), tet: wp.array(dtype=int)) -> float:
    a = x[tet[0]]
    b = x[tet[1]]
    c = x[tet[2]]
    d = x[tet[3]]
    return wp.dot(b - a, wp.cross(c - a, d - a)) / 6.0


@wp.kernel
def element_volumes(x: wp.array(dtype=wp.vec3), tets: wp.array2d(dtype=int), vol: wp.array(dtype=float)):
    e = wp.tid()
    vol[e] = tet_volume(x, tets[e])


@wp.kernel
def scale_masses(mass: wp.array(dtype=float), density: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = mass[i] * density


class SoftBody:
    def __init__(self, points: np.ndarray, tets: np.ndarray):
        self.num_points = len(points)
        self.num_tets = len(tets)
        self.x = wp.array(points, dtype=wp.vec3, device="cpu")
        self.tets = wp.array(tets.astype(np.int32), dtype=int, device="cpu")
        self.vol = wp.zeros(self.num_tets, dtype=float, device="cpu")
        self.mass = wp.array(np.ones(self.num_points).astype(np.float32), device="cpu")
        self.scaled = wp.zeros_like(self.mass)

    def update(self, density: float):
        wp.launch(element_volumes, dim=self.num_tets, inputs=[self.x, self.tets, self.vol], device="cpu")
        half = self.num_points // 2
        wp.launch(scale_masses, dim=half, inputs=[self.mass, density, self.scaled], device="cpu")


def run():
    points = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    tets = np.array([[0, 1, 2, 3]])
    SoftBody(points, tets).update(1000.0)
