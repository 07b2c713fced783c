# real-bug: class=race warp=silent
# source: https://github.com/newton-physics/newton/pull/2477
# why: every thread of the clearing kernel reads the active count, and thread 0 resets that count in the same launch ("all threads have already cached it"): threads that read it after the reset, in another block on a GPU or every later thread on the CPU, clear nothing and stale entries survive
import numpy as np
import warp as wp


@wp.kernel
def _clear_active_kernel(
    ht_keys: wp.array(dtype=wp.int32),
    ht_active_slots: wp.array(dtype=wp.int32),
    ht_capacity: int,
    num_threads: int,
):
    tid = wp.tid()
    count = ht_active_slots[ht_capacity]
    i = tid
    while i < count:
        ht_keys[ht_active_slots[i]] = 0
        i += num_threads
    if tid == 0:
        ht_active_slots[ht_capacity] = 0


def run() -> np.ndarray:
    capacity, num_threads = 8, 4
    keys = wp.array(np.array([7, 0, 5, 9, 0, 3, 0, 4], dtype=np.int32), dtype=wp.int32, device="cpu")
    # active slots 0, 2, 3, 5, 7; the count (5) sits after the slot list
    slots = wp.array(np.array([0, 2, 3, 5, 7, 0, 0, 0, 5], dtype=np.int32), dtype=wp.int32, device="cpu")
    wp.launch(_clear_active_kernel, dim=num_threads, inputs=[keys, slots, capacity, num_threads], device="cpu")
    return np.concatenate([keys.numpy(), slots.numpy()[capacity:]])


def reference() -> np.ndarray:
    return np.zeros(9)
