# corpus: expect= warp=ok
"""A CPU reference path for a column reduction used in regression tests: 2 x 14,000 floats (109 KiB) in a
shared tile is more than an sm_86 block has, but every launch of the kernel says device="cpu", where
Warp's tile arena is 256 KiB (warp's own tests do the same: test_tile_reduce.py)."""

import warp as wp


@wp.kernel(module="unique")
def column_sums_reference(samples: wp.array2d(dtype=float), sums: wp.array(dtype=float)):
    block = wp.tile_load(samples, shape=(2, 14000), storage="shared")
    wp.tile_store(sums, wp.tile_sum(block, axis=0))


class ReferenceReducer:
    device = "cpu"

    def reduce(self, samples, sums):
        wp.launch_tiled(
            column_sums_reference,
            dim=[1],
            inputs=[samples],
            outputs=[sums],
            block_dim=32,
            device="cpu",
        )
