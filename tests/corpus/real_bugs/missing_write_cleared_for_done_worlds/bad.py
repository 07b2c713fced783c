# real-bug: class=missing-write warp=silent
# source: https://github.com/google-deepmind/mujoco_warp/pull/1501
# why: the constraint force of every world is cleared before the rebuild, but the rebuild kernel skips worlds that already converged (`ctx_done_in`): their final force is lost and reads as zero
import numpy as np
import warp as wp


@wp.kernel
def _update_constraint_init_qfrc_constraint_sparse(
    ctx_done_in: wp.array(dtype=bool),
    efc_force_in: wp.array2d(dtype=float),
    efc_dof_in: wp.array2d(dtype=int),
    qfrc_constraint_out: wp.array2d(dtype=float),
):
    worldid, efcid = wp.tid()
    if ctx_done_in[worldid]:
        return
    wp.atomic_add(qfrc_constraint_out, worldid, efc_dof_in[worldid, efcid], efc_force_in[worldid, efcid])


def run() -> np.ndarray:
    nworld, nv, njmax = 2, 2, 2
    # world 0 converged in an earlier iteration: its constraint force is final
    done = wp.array(np.array([True, False]), dtype=bool, device="cpu")
    qfrc = wp.array(np.array([[4.0, 5.0], [9.0, 9.0]], dtype=np.float32), dtype=float, device="cpu")
    force = wp.array(np.array([[1.0, 1.0], [2.0, 3.0]], dtype=np.float32), dtype=float, device="cpu")
    dof = wp.array(np.array([[0, 1], [0, 1]], dtype=np.int32), dtype=int, device="cpu")
    qfrc.zero_()
    wp.launch(
        _update_constraint_init_qfrc_constraint_sparse,
        dim=(nworld, njmax),
        inputs=[done, force, dof],
        outputs=[qfrc],
        device="cpu",
    )
    return qfrc.numpy()


def reference() -> np.ndarray:
    return np.array([[4.0, 5.0], [2.0, 3.0]])
