import warp as wp

from .kernels import apply_exposure, tonemap_rows


def tonemap(hdr, white: float):
    ldr = wp.empty_like(hdr)
    wp.launch(tonemap_rows, dim=hdr.shape, inputs=[hdr, ldr, white])
    return ldr


def expose(flat_pixels, exposure: float):
    # "+ 1 for the background pixel": the background is not in this buffer
    wp.launch(apply_exposure, dim=len(flat_pixels) + 1, inputs=[flat_pixels, exposure])
