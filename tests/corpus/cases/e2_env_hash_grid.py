# corpus: expect=WH026 warp=silent
"""Per-environment spatial hash for particle neighbour queries: every environment owns `num_buckets`
counters in one flat array. The hash is int32 with the classic primes, so `h % num_buckets` is negative
for about half of the cells and `env * num_buckets + bucket` lands in the previous environment's range."""

import warp as wp


@wp.struct
class HashGridParams:
    cell_size: float
    num_buckets: int
    num_envs: int


@wp.func
def cell_coord(p: wp.vec3, cell_size: float) -> wp.vec3i:
    inv = 1.0 / cell_size
    return wp.vec3i(int(wp.floor(p[0] * inv)), int(wp.floor(p[1] * inv)), int(wp.floor(p[2] * inv)))


@wp.func
def spatial_hash(c: wp.vec3i) -> int:
    return (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)


@wp.kernel
def count_particles_per_bucket(
    positions: wp.array(dtype=wp.vec3),
    particle_env: wp.array(dtype=int),
    params: HashGridParams,
    bucket_counts: wp.array(dtype=int),
):
    tid = wp.tid()
    c = cell_coord(positions[tid], params.cell_size)
    h = (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)
    bucket = h % params.num_buckets
    env = particle_env[tid]
    wp.atomic_add(bucket_counts, env * params.num_buckets + bucket, 1)


class EnvHashGrid:
    def __init__(self, num_envs: int, num_buckets: int, cell_size: float, device: str = "cpu"):
        self.params = HashGridParams()
        self.params.cell_size = cell_size
        self.params.num_buckets = num_buckets
        self.params.num_envs = num_envs
        self.bucket_counts = wp.zeros(num_envs * num_buckets, dtype=int, device=device)
        self.device = device

    def build(self, positions: wp.array, particle_env: wp.array):
        self.bucket_counts.zero_()
        wp.launch(
            count_particles_per_bucket,
            dim=positions.shape[0],
            inputs=[positions, particle_env, self.params, self.bucket_counts],
            device=self.device,
        )
