# corpus: expect=WH005 warp=rejects
"""A contact kernel that returns early with a value, as a host function would: Warp rejects kernels
that return values."""

import warp as wp


@wp.kernel
def count_contacts(depth: wp.array(dtype=float), margin: float, hits: wp.array(dtype=int)):
    i = wp.tid()
    d = depth[i]
    if d > margin:
        return 0
    wp.atomic_add(hits, 0, 1)
