# corpus: expect= warp=ok
"""A blocked Cholesky factorisation, as in newton's kamino solvers: a newer tile builtin is used when this
Warp has it, tested at import time; under Warp 1.19 the `else` branch is compiled. The checker cannot
know the flag, so it judges neither branch (the `if` one calls a builtin 1.19 lacks)."""

import functools

import warp as wp

HAS_TILE_MATMUL_TRANSPOSE_UPDATE = hasattr(wp, "tile_matmul_transpose_update")

BLOCK = wp.constant(8)


@functools.cache
def make_llt_blocked_factorize_kernel(num_blocks: int):
    @wp.kernel
    def llt_blocked_factorize(
        a: wp.array3d(dtype=wp.float32),
        lower: wp.array3d(dtype=wp.float32),
    ):
        world, _lane = wp.tid()
        a_w = a[world]
        l_w = lower[world]
        for k in range(num_blocks):
            diag = wp.tile_load(a_w, shape=(BLOCK, BLOCK), offset=(k * BLOCK, k * BLOCK))
            for j in range(k):
                l_block = wp.tile_load(l_w, shape=(BLOCK, BLOCK), offset=(k * BLOCK, j * BLOCK))
                if wp.static(HAS_TILE_MATMUL_TRANSPOSE_UPDATE):
                    wp.tile_matmul_transpose_update(diag, l_block, l_block, alpha=-1.0)
                else:
                    l_block_t = wp.tile_transpose(l_block)
                    wp.tile_matmul(l_block, l_block_t, diag, alpha=-1.0)
            wp.tile_store(l_w, diag, offset=(k * BLOCK, k * BLOCK))

    return llt_blocked_factorize


factorize_4 = make_llt_blocked_factorize_kernel(4)


class BlockedCholesky:
    def __init__(self, num_worlds: int, num_blocks: int):
        n = num_blocks * BLOCK
        self.kernel = make_llt_blocked_factorize_kernel(num_blocks)
        self.a = wp.zeros((num_worlds, n, n), dtype=wp.float32)
        self.lower = wp.zeros((num_worlds, n, n), dtype=wp.float32)

    def factorize(self):
        wp.launch_tiled(self.kernel, dim=[self.a.shape[0]], inputs=[self.a, self.lower], block_dim=32)
