import numpy as np
import warp as wp

from . import kernels
from .kernels import integrate_grains


class GranularSolver:
    def __init__(self, positions: np.ndarray, grain_radius: float):
        self.count = len(positions)
        self.x = wp.array(positions, dtype=wp.vec3, device="cpu")
        self.v = wp.zeros(self.count, dtype=wp.vec3, device="cpu")
        self.f = wp.zeros_like(self.v)
        self.radius = wp.full(self.count, grain_radius, dtype=wp.float64, device="cpu")

    def step(self, dt: float):
        wp.launch(
            kernels.ground_contacts,
            dim=self.count,
            inputs=[self.x, self.radius, 1.0e4],
            outputs=[self.f],
            device="cpu",
        )
        wp.launch(integrate_grains, dim=self.count, inputs=[self.x, self.v, self.f, dt], device="cpu")
