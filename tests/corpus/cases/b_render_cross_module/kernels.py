import warp as wp


@wp.func
def reinhard(c: wp.vec3, white: float) -> wp.vec3:
    lum = wp.dot(c, wp.vec3(0.2126, 0.7152, 0.0722))
    scale = (1.0 + lum / (white * white)) / (1.0 + lum)
    return c * scale


@wp.kernel
def tonemap_rows(hdr: wp.array2d(dtype=wp.vec3), ldr: wp.array2d(dtype=wp.vec3), white: float):
    row = wp.tid()
    for col in range(hdr.shape[1]):
        ldr[row, col] = reinhard(hdr[row, col], white)


@wp.kernel
def apply_exposure(pixels: wp.array(dtype=wp.vec3), exposure: float):
    pid = wp.tid()
    pixels[pid] = pixels[pid] * wp.pow(2.0, exposure)
