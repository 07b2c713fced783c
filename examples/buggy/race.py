"""A reduction that is right on the CPU and wrong on every GPU (a data race)."""

import numpy as np
import warp as wp


@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[0] = out[0] + x[i]  # read-modify-write from every thread


@wp.kernel
def transpose_copy(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float)):
    i, j = wp.tid()
    dst[j, i] = src[j, i]  # j varies fastest but indexes rows: strided accesses


def main() -> None:
    n = 1024
    x = wp.array(np.ones(n, dtype=np.float32))
    s = wp.zeros(1, dtype=float)
    wp.launch(total, dim=n, inputs=[x, s])
    print(s.numpy()[0], "(expected", n, ")")
