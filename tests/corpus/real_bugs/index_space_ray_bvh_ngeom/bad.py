# real-bug: class=index-space warp=silent
# source: https://github.com/google-deepmind/mujoco_warp/pull/1131
# why: the BVH numbers its bounds `world * bvh_ngeom + local`, but the launch passes the model's geom count `ngeom` as the per-world stride: from the second world on the local index lands on the wrong geom, and goes negative (which Warp wraps from the end, as numpy does) in the third
import numpy as np
import warp as wp


@wp.kernel
def _ray_bvh(
    ngeom: int,
    bvh_geom_id: wp.array(dtype=int),
    geom_size: wp.array(dtype=float),
    hit_bounds_nr: wp.array2d(dtype=int),
    dist_out: wp.array2d(dtype=float),
):
    worldid, rayid = wp.tid()
    bounds_nr = hit_bounds_nr[worldid, rayid]
    bvh_local = bounds_nr - (worldid * ngeom)
    geomid = bvh_geom_id[bvh_local]
    dist_out[worldid, rayid] = geom_size[geomid]


def run() -> np.ndarray:
    nworld, ngeom = 3, 3
    bvh_ngeom = 2  # the BVH holds only the geoms that can be hit (2 of 3), for each world in turn
    bvh_geom_id = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    geom_size = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, device="cpu")
    # the bounds each ray hit, numbered across the BVH of all worlds: world * bvh_ngeom + local
    hits = wp.array(np.array([[1], [3], [5]], dtype=np.int32), dtype=int, device="cpu")
    dist = wp.zeros((nworld, 1), dtype=float, device="cpu")
    assert ngeom == 3
    wp.launch(_ray_bvh, dim=(nworld, 1), inputs=[ngeom, bvh_geom_id, geom_size, hits, dist], device="cpu")
    return dist.numpy()


def reference() -> np.ndarray:
    return np.array([[3.0], [3.0], [3.0]])
