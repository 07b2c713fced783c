# corpus: expect=WH015 warp=silent
"""Rigid-body coupling: each block sums the contact forces its 32 particle slots exert on 272 bodies.
`tile_sum(..., axis=0)` reduces in shared memory, so the 32 x 272 tile of vec3 forces (102 KiB) moves
there: just over the 98.5 KiB an sm_86 block has at block_dim=128. Warp compiles it; only the GPU launch
fails."""

import warp as wp

SLOTS = wp.constant(32)
NUM_BODIES = wp.constant(272)


@wp.func
def clamp_force(f: wp.vec3, limit: float) -> wp.vec3:
    n = wp.length(f)
    if n > limit:
        return f * (limit / n)
    return f


@wp.kernel
def accumulate_body_forces(
    slot_forces: wp.array2d(dtype=wp.vec3),
    body_forces: wp.array2d(dtype=wp.vec3),
):
    block = wp.tid()
    forces = wp.tile_load(slot_forces, shape=(SLOTS, NUM_BODIES), offset=(block * SLOTS, 0))
    per_body = wp.tile_sum(forces, axis=0)
    wp.tile_store(body_forces[block], per_body)


def couple(slot_forces, body_forces, num_blocks: int):
    wp.launch_tiled(
        accumulate_body_forces,
        dim=num_blocks,
        inputs=[slot_forces],
        outputs=[body_forces],
        block_dim=128,
    )
