"""A kernel whose contract lives in the sibling module scale_contract.py."""

import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), out: wp.array(dtype=float), s: float):
    i = wp.tid()
    out[i] = s * x[i]
