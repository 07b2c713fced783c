import numpy as np
import warp as wp

NV = 4


@wp.kernel
def actuator_velocity_sparse(
    qvel_in: wp.array2d(dtype=float),
    actuator_moment_in: wp.array3d(dtype=float),
    actuator_velocity_out: wp.array2d(dtype=float),
):
    worldid, actid = wp.tid()
    moment_tile = wp.tile_load(actuator_moment_in[worldid, actid], shape=NV)
    qvel_tile = wp.tile_load(qvel_in[worldid], shape=NV)
    moment_qvel_tile = wp.tile_map(wp.mul, moment_tile, qvel_tile)
    actuator_velocity_tile = wp.tile_reduce(wp.add, moment_qvel_tile)
    actuator_velocity_out[worldid, actid] = actuator_velocity_tile[0]


def run() -> np.ndarray:
    nworld, nu = 2, 3
    rng = np.random.default_rng(0)
    qvel = wp.array(rng.standard_normal((nworld, NV)).astype(np.float32), dtype=float, device="cpu")
    moment = wp.array(rng.standard_normal((nworld, nu, NV)).astype(np.float32), dtype=float, device="cpu")
    velocity = wp.zeros((nworld, nu), dtype=float, device="cpu")
    wp.launch_tiled(
        actuator_velocity_sparse, dim=(nworld, nu), inputs=[qvel, moment], outputs=[velocity], block_dim=8,
        device="cpu",
    )
    return velocity.numpy()


def reference() -> np.ndarray:
    rng = np.random.default_rng(0)
    qvel = rng.standard_normal((2, NV)).astype(np.float32)
    moment = rng.standard_normal((2, 3, NV)).astype(np.float32)
    return np.einsum("wav,wv->wa", moment, qvel)
