# corpus: expect=WH021 warp=rejects
"""Sampling a signed distance field on a regular grid: the sample coordinates come straight from
`np.linspace`, which is float64, and go to a `wp.array(dtype=float)` parameter without conversion."""

import numpy as np
import warp as wp


@wp.func
def sphere_sdf(p: wp.vec3, center: wp.vec3, radius: float) -> float:
    return wp.length(p - center) - radius


@wp.kernel
def sample_sdf(
    xs: wp.array(dtype=float),
    extent: float,
    center: wp.vec3,
    radius: float,
    out: wp.array2d(dtype=float),
):
    i, j = wp.tid()
    p = wp.vec3(xs[i], xs[j], 0.0) * extent
    out[i, j] = sphere_sdf(p, center, radius)


def sample_grid(resolution: int, extent: float):
    xs = np.linspace(-1.0, 1.0, resolution)
    out = wp.zeros((resolution, resolution), dtype=float, device="cpu")
    wp.launch(
        sample_sdf,
        dim=(resolution, resolution),
        inputs=[xs, extent, wp.vec3(0.0, 0.0, 0.0), 0.5],
        outputs=[out],
        device="cpu",
    )
    return out


def run():
    sample_grid(16, 1.0)
