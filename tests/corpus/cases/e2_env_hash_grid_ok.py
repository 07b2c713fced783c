# corpus: expect= warp=ok
"""The same per-environment hash grid, hashed in uint32 as Warp's own hash grid and newton do; a second
kernel keeps int32 but folds the remainder back into [0, n) before offsetting it."""

import warp as wp


@wp.struct
class HashGridParams:
    cell_size: float
    num_buckets: int


@wp.func
def cell_coord(p: wp.vec3, cell_size: float) -> wp.vec3i:
    inv = 1.0 / cell_size
    return wp.vec3i(int(wp.floor(p[0] * inv)), int(wp.floor(p[1] * inv)), int(wp.floor(p[2] * inv)))


@wp.func
def bucket_of(c: wp.vec3i, num_buckets: int) -> int:
    h = (
        (wp.uint32(c[0]) * wp.uint32(73856093))
        ^ (wp.uint32(c[1]) * wp.uint32(19349663))
        ^ (wp.uint32(c[2]) * wp.uint32(83492791))
    )
    return int(h % wp.uint32(num_buckets))


@wp.kernel
def count_particles_per_bucket(
    positions: wp.array(dtype=wp.vec3),
    particle_env: wp.array(dtype=int),
    params: HashGridParams,
    bucket_counts: wp.array(dtype=int),
):
    tid = wp.tid()
    c = cell_coord(positions[tid], params.cell_size)
    bucket = bucket_of(c, params.num_buckets)
    wp.atomic_add(bucket_counts, particle_env[tid] * params.num_buckets + bucket, 1)


@wp.kernel
def count_particles_signed(
    positions: wp.array(dtype=wp.vec3),
    particle_env: wp.array(dtype=int),
    params: HashGridParams,
    bucket_counts: wp.array(dtype=int),
):
    tid = wp.tid()
    c = cell_coord(positions[tid], params.cell_size)
    h = (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)
    bucket = h % params.num_buckets
    if bucket < 0:
        bucket += params.num_buckets
    wp.atomic_add(bucket_counts, particle_env[tid] * params.num_buckets + bucket, 1)


@wp.kernel
def count_particles_single_env(
    positions: wp.array(dtype=wp.vec3), params: HashGridParams, bucket_counts: wp.array(dtype=int)
):
    # one table: a negative bucket wraps like a Python index and stays consistent
    tid = wp.tid()
    c = cell_coord(positions[tid], params.cell_size)
    h = (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)
    wp.atomic_add(bucket_counts, h % params.num_buckets, 1)


def build_grid(positions: wp.array, particle_env: wp.array, params: HashGridParams, counts: wp.array):
    counts.zero_()
    wp.launch(
        count_particles_per_bucket,
        dim=positions.shape[0],
        inputs=[positions, particle_env, params, counts],
        device=positions.device,
    )
