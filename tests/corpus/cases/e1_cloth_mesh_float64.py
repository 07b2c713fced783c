# corpus: expect=WH021 warp=rejects
"""A cloth sheet whose rest positions come from a NumPy grid: `np.zeros((n, 3))` is float64, and
`wp.array(verts)` keeps float64, so the vec3 (float32) parameter of the integrator refuses it at launch."""

import numpy as np
import warp as wp


@wp.func
def apply_gravity(v: wp.vec3, inv_mass: float, g: wp.vec3, dt: float) -> wp.vec3:
    if inv_mass == 0.0:
        return v
    return v + g * dt


@wp.kernel
def integrate_cloth(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    inv_mass: wp.array(dtype=float),
    g: wp.vec3,
    dt: float,
):
    tid = wp.tid()
    vel = apply_gravity(v[tid], inv_mass[tid], g, dt)
    v[tid] = vel
    x[tid] = x[tid] + vel * dt


class ClothSheet:
    def __init__(self, nx: int, ny: int, spacing: float):
        self.count = nx * ny
        verts = np.zeros((self.count, 3))
        for j in range(ny):
            for i in range(nx):
                verts[j * nx + i] = (i * spacing, 1.0, j * spacing)
        masses = np.ones(self.count, dtype=np.float32)
        masses[:nx] = 0.0  # pin the first row
        self.x = wp.array(verts, device="cpu")
        self.v = wp.zeros(self.count, dtype=wp.vec3, device="cpu")
        self.inv_mass = wp.array(masses, dtype=float, device="cpu")

    def step(self, dt: float):
        wp.launch(
            integrate_cloth,
            dim=self.count,
            inputs=[self.x, self.v, self.inv_mass, wp.vec3(0.0, -9.8, 0.0), dt],
            device="cpu",
        )


def run():
    cloth = ClothSheet(8, 8, 0.1)
    cloth.step(1.0 / 60.0)
