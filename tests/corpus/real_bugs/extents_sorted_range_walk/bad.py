# real-bug: class=extents warp=trap
# source: https://github.com/newton-physics/newton/pull/3641
# why: the loop walks a sorted range of equal keys (`start + k`) with no check against the number of active entries: when the key is the last one it reads past the end (debug mode traps)
import numpy as np
import warp as wp


@wp.func
def binary_search_find_range_start(lower: int, upper: int, key: int, keys: wp.array(dtype=int)) -> int:
    lo = lower
    hi = upper
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < upper and keys[lo] == key:
        return lo
    return -1


@wp.kernel
def _warmstart_contacts_by_key(
    num_active_old: int,
    sorted_contact_keys_old: wp.array(dtype=int),
    contact_reaction_old: wp.array(dtype=float),
    contact_keys_new: wp.array(dtype=int),
    contact_reaction_new: wp.array(dtype=float),
):
    cid = wp.tid()
    target_key = contact_keys_new[cid]
    start = binary_search_find_range_start(0, num_active_old, target_key, sorted_contact_keys_old)
    if start == -1:
        return
    total = float(0.0)
    k = wp.int32(0)
    old_key = sorted_contact_keys_old[start]
    while target_key == old_key:
        total += contact_reaction_old[start + k]
        k += 1
        old_key = sorted_contact_keys_old[start + k]
    contact_reaction_new[cid] = total


def run() -> np.ndarray:
    keys_old = wp.array(np.array([1, 2, 2], dtype=np.int32), dtype=int, device="cpu")
    reaction_old = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, device="cpu")
    keys_new = wp.array(np.array([2, 1], dtype=np.int32), dtype=int, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(_warmstart_contacts_by_key, dim=2, inputs=[3, keys_old, reaction_old, keys_new, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.array([5.0, 1.0], dtype=np.float32)
