import warp as wp


@wp.func
def gaussian(d2: float, inv_h2: float) -> float:
    return wp.exp(-d2 * inv_h2)


@wp.kernel
def splat_density(
    points: wp.array(dtype=wp.vec2),
    cell_size: float,
    inv_h2: float,
    image: wp.array2d(dtype=float),
):
    i, j = wp.tid()
    center = wp.vec2((float(j) + 0.5) * cell_size, (float(i) + 0.5) * cell_size)
    total = float(0.0)
    for p in range(points.shape[0]):
        d = points[p] - center
        total += gaussian(wp.dot(d, d), inv_h2)
    image[i, j] = total
