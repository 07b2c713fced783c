import numpy as np
import warp as wp

TILE_NU_SIZE = 2
TILE_NV_SIZE = 2


@wp.kernel
def actuator_velocity_dense(
    qvel_in: wp.array3d(dtype=float),
    actuator_moment_in: wp.array3d(dtype=float),
    tile_nu_adr: wp.array(dtype=int),
    tile_nv_adr: wp.array(dtype=int),
    actuator_velocity_out: wp.array3d(dtype=float),
):
    worldid, nodeid = wp.tid()
    offset_nu = tile_nu_adr[nodeid]
    offset_nv = tile_nv_adr[nodeid]
    actuator_moment_tile = wp.tile_load(
        actuator_moment_in[worldid], shape=(TILE_NU_SIZE, TILE_NV_SIZE), offset=(offset_nu, offset_nv)
    )
    qvel_tile = wp.tile_load(qvel_in[worldid], shape=(TILE_NV_SIZE, 1), offset=(offset_nv, 0))
    velocity_tile = wp.tile_matmul(actuator_moment_tile, qvel_tile)
    wp.tile_store(actuator_velocity_out[worldid], velocity_tile, offset=(offset_nu, 0))


def run() -> np.ndarray:
    # two independent 2x2 blocks of the actuator moment (two trees of 2 actuators and 2 dofs each)
    nworld = 2
    rng = np.random.default_rng(1)
    moment = np.zeros((nworld, 4, 4), dtype=np.float32)
    moment[:, :2, :2] = rng.standard_normal((nworld, 2, 2))
    moment[:, 2:, 2:] = rng.standard_normal((nworld, 2, 2))
    qvel = rng.standard_normal((nworld, 4, 1)).astype(np.float32)
    tile_nu_adr = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    tile_nv_adr = wp.array(np.array([0, 2], dtype=np.int32), dtype=int, device="cpu")
    velocity = wp.zeros((nworld, 4, 1), dtype=float, device="cpu")
    wp.launch_tiled(
        actuator_velocity_dense,
        dim=(nworld, tile_nu_adr.size),
        inputs=[wp.array(qvel, device="cpu"), wp.array(moment, device="cpu"), tile_nu_adr, tile_nv_adr],
        outputs=[velocity],
        block_dim=8,
        device="cpu",
    )
    return velocity.numpy()


def reference() -> np.ndarray:
    rng = np.random.default_rng(1)
    moment = np.zeros((2, 4, 4), dtype=np.float32)
    moment[:, :2, :2] = rng.standard_normal((2, 2, 2))
    moment[:, 2:, 2:] = rng.standard_normal((2, 2, 2))
    qvel = rng.standard_normal((2, 4, 1)).astype(np.float32)
    return moment @ qvel
