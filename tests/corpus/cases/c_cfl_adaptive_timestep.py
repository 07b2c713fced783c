# corpus: expect=WH010 warp=silent
"""An adaptive time step for an SPH fluid: each fast particle lowers the shared step with a plain
`dt[0] = wp.min(dt[0], ...)` under a thread-dependent test. Two fast particles read the same old
step and the later store wins: on a GPU the step may be too large and the simulation blows up."""

import warp as wp

CFL_NUMBER = wp.constant(0.4)


@wp.func
def acoustic_speed(density: float, rest_density: float, stiffness: float) -> float:
    return wp.sqrt(stiffness * wp.max(density / rest_density, 1.0))


@wp.kernel
def compute_cfl_timestep(
    velocities: wp.array(dtype=wp.vec3),
    densities: wp.array(dtype=float),
    rest_density: float,
    stiffness: float,
    smoothing_length: float,
    min_speed: float,
    dt: wp.array(dtype=float),
):
    i = wp.tid()
    speed = wp.length(velocities[i]) + acoustic_speed(densities[i], rest_density, stiffness)
    if speed > min_speed:
        dt[0] = wp.min(dt[0], CFL_NUMBER * smoothing_length / speed)


class SphSolver:
    def __init__(self, max_dt: float, smoothing_length: float, device: str = "cpu"):
        self.max_dt = max_dt
        self.h = smoothing_length
        self.dt = wp.array([max_dt], dtype=float, device=device)

    def choose_timestep(self, velocities, densities):
        self.dt.fill_(self.max_dt)
        wp.launch(
            compute_cfl_timestep,
            dim=velocities.shape[0],
            inputs=[velocities, densities, 1000.0, 20.0, self.h, 1.0e-6],
            outputs=[self.dt],
        )
        return self.dt
