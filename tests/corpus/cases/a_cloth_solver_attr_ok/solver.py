import warp as wp

from .kernels import integrate_particles


class ClothSolver:
    def __init__(self, num_envs: int, particles_per_env: int, device: str = "cpu"):
        self.num_envs = num_envs
        self.particles_per_env = particles_per_env
        self.gravity = wp.vec3(0.0, -9.81, 0.0)
        self.damping = 0.1
        self._integrate = integrate_particles
        count = num_envs * particles_per_env
        self.x = wp.zeros(count, dtype=wp.vec3, device=device)
        self.v = wp.zeros(count, dtype=wp.vec3, device=device)
        self.inv_mass = wp.ones(count, dtype=float, device=device)

    def step(self, dt: float):
        wp.launch(
            self._integrate,
            dim=self.num_envs * self.particles_per_env,
            inputs=[self.x, self.v, self.inv_mass, self.gravity, self.damping, dt],
        )
