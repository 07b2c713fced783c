# corpus: expect=WH015 warp=silent
"""Articulation solver: each block multiplies a 64-row slab of the constraint Jacobian by the inverse-mass
weighted transpose, 168 columns at a time (28 bodies x 6 dofs). The two operand tiles (42 KiB each) and the
accumulator (16 KiB) live in shared memory: 100 KiB, just over the 98 KiB an sm_86 block has at
block_dim=256. Warp compiles it; on the GPU the launch fails (`CUDA error 1: invalid argument`), and the
CPU backend, with its 256 KiB arena, runs it, so only a GPU shows it."""

import warp as wp

ROWS = wp.constant(64)
DOFS_PER_BODY = 6
BODIES_PER_STEP = 28
TILE_K = wp.constant(DOFS_PER_BODY * BODIES_PER_STEP)
BLOCK = 256


@wp.kernel
def delassus_blocks(
    jacobian: wp.array2d(dtype=float),
    weighted_jt: wp.array2d(dtype=float),
    delassus: wp.array2d(dtype=float),
    k_steps: int,
):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(ROWS, ROWS), dtype=float)
    for k in range(k_steps):
        jac = wp.tile_load(jacobian, shape=(ROWS, TILE_K), offset=(i * ROWS, k * TILE_K))
        wjt = wp.tile_load(weighted_jt, shape=(TILE_K, ROWS), offset=(k * TILE_K, j * ROWS))
        wp.tile_matmul(jac, wjt, acc)
    wp.tile_store(delassus, acc, offset=(i * ROWS, j * ROWS))


class DelassusAssembler:
    def __init__(self, num_rows: int, num_dofs: int):
        self.blocks = num_rows // 64
        self.k_steps = num_dofs // (DOFS_PER_BODY * BODIES_PER_STEP)

    def assemble(self, jacobian, weighted_jt, delassus):
        wp.launch_tiled(
            delassus_blocks,
            dim=(self.blocks, self.blocks),
            inputs=[jacobian, weighted_jt, delassus, self.k_steps],
            block_dim=BLOCK,
        )
