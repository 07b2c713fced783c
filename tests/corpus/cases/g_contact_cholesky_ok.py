# corpus: expect= warp=ok
"""Per-environment contact solve: each block factors its 76 x 76 double-precision Delassus matrix with
`tile_cholesky` and solves for the impulses: the matrix and its factor (45 KiB each) and the two vectors,
91.4 KiB of shared memory, under the 98 KiB an sm_86 block has at block_dim=256."""

import warp as wp

MAX_CONTACTS = 19
ROWS_PER_CONTACT = 4  # normal + two friction directions + torsion
N = MAX_CONTACTS * ROWS_PER_CONTACT


@wp.func
def regularize(d: wp.float64, compliance: wp.float64) -> wp.float64:
    return d + compliance


@wp.kernel
def solve_contact_impulses(
    delassus: wp.array3d(dtype=wp.float64),
    bias: wp.array2d(dtype=wp.float64),
    impulses: wp.array2d(dtype=wp.float64),
):
    env = wp.tid()
    A = wp.tile_load(delassus[env], shape=(N, N))
    L = wp.tile_cholesky(A)
    b = wp.tile_load(bias[env], shape=N)
    x = wp.tile_cholesky_solve(L, b)
    wp.tile_store(impulses[env], x)


class ContactSolver:
    def __init__(self, num_envs: int):
        self.num_envs = num_envs
        self.threads = 256

    def step(self, delassus, bias, impulses):
        wp.launch_tiled(
            solve_contact_impulses,
            dim=self.num_envs,
            inputs=[delassus, bias],
            outputs=[impulses],
            block_dim=256,
        )
