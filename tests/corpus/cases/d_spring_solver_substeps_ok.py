# corpus: expect= warp=ok
"""The same solver with `substeps: int`, and an `int` passed where the kernel takes a `float` (Warp
converts a Python int for a float parameter at launch)."""

import warp as wp


@wp.kernel
def integrate_springs(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    stiffness: float,
    damping: float,
    dt: float,
    num_substeps: int,
):
    i = wp.tid()
    h = dt / float(num_substeps)
    for _ in range(num_substeps):
        f = -stiffness * x[i] - damping * v[i]
        v[i] = v[i] + f * h
        x[i] = x[i] + v[i] * h


class SpringSolver:
    def __init__(self, stiffness: float = 100.0, damping: float = 1.0):
        self.stiffness = stiffness
        self.damping = damping

    def step(self, x: wp.array, v: wp.array, dt: float, substeps: int = 4, stiffness: int = 100):
        wp.launch(
            integrate_springs,
            dim=x.shape[0],
            inputs=[x, v, stiffness, self.damping, dt, substeps],
            device="cpu",
        )


def run():
    x = wp.zeros(8, dtype=wp.vec3, device="cpu")
    v = wp.zeros(8, dtype=wp.vec3, device="cpu")
    SpringSolver().step(x, v, 1.0 / 60.0, 4)
