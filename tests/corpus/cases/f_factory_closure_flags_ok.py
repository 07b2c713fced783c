# corpus: expect= warp=ok
"""An SPH density kernel made by a factory whose configuration is local to it: the checker folds the
closure values (`smoothing_order = 2`, `use_cubic = smoothing_order > 1`) as Warp does, so the branch the
factory never compiles (an older spline API this Warp lacks) is not judged; `range(wp.static(...))` loops
are read as usual."""

import warp as wp

NEIGHBOURS = 8


def make_density_kernel():
    smoothing_order = 2
    use_cubic = smoothing_order > 1
    support = 2.0 * smoothing_order

    @wp.func
    def cubic_weight(r: float, h: float) -> float:
        q = r / h
        if q >= wp.static(support):
            return 0.0
        t = wp.static(support) - q
        return t * t * t / (h * h * h)

    @wp.kernel
    def compute_density(
        x: wp.array(dtype=wp.vec3),
        neighbours: wp.array2d(dtype=wp.int32),
        mass: float,
        h: float,
        density: wp.array(dtype=float),
    ):
        i = wp.tid()
        rho = wp.float32(0.0)
        for k in range(wp.static(NEIGHBOURS)):
            j = neighbours[i, k]
            if j < 0:
                continue
            r = wp.length(x[i] - x[j])
            if wp.static(use_cubic):
                rho += mass * cubic_weight(r, h)
            else:
                rho += mass * wp.sph_poly6_weight(r, h)
        density[i] = rho

    return compute_density


compute_density = make_density_kernel()


class DensitySolver:
    def __init__(self, num_particles: int):
        self.kernel = make_density_kernel()
        self.x = wp.zeros(num_particles, dtype=wp.vec3)
        self.neighbours = wp.full((num_particles, NEIGHBOURS), -1, dtype=wp.int32)
        self.density = wp.zeros(num_particles, dtype=float)

    def step(self, mass: float, h: float):
        wp.launch(
            self.kernel,
            dim=self.x.shape[0],
            inputs=[self.x, self.neighbours, mass, h],
            outputs=[self.density],
        )
