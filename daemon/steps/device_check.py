"""The benchmark's check after the timed loop, on the device, for outputs too large to read back.

A 1 GiB output read back, converted to float64 and compared with a float64 reference costs
seconds and several GiB of host memory per kernel (issue 36: 7.7-8.2 s per 1 GiB kernel on an
H100, over the default 4,096 MB memory limit). Two checks in the timed buffers replace it:

- **every element written, at the full size** (``unwritten_elements``): the outputs of the
  set just timed are filled with the poison on the device, the kernel is launched once more on
  that set's inputs, and the poisoned elements left are counted on the device. A kernel that
  only writes what the validated sizes check (``shrunk_size``) fails it at the benchmark's size.
- **the values, at a capped size, in the same buffers** (``prefix_views``): the fresh case
  (its own seed) is made at a size whose arrays fit ``REVALIDATE_MAX_BYTES`` and written into
  the first elements of the timed buffers (views of them: the same memory, whatever state the
  timed launches left there), then compared with the reference as before (bench.revalidate).

Only arrays whose element size is a multiple of 4 bytes with one repeated poison word are
checked on the device (float32, the integer types, vectors of them); others are read back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp

from warp_harness.daemon.comparison import poison_like
from warp_harness.daemon.integrity import TRUSTED

# the most bytes of arrays (inputs and outputs) the check after the timed loop makes on the host;
# 16 MiB (4M float32 elements, far past any validated size): a check of 64 MiB took about 0.4 s
# per 1 GiB kernel on an H100 (stream_large, 2026-12-07), longer than a gap between timed
# windows (0.1 s), so only the first gap was checked; at 16 MiB each gap can be
REVALIDATE_MAX_BYTES = 16 << 20
# the benchmark makes three input sets on the host while they fit this together, else one (and, on
# CUDA, device copies of it): steps/bench._launch_sets, and the verdict worker's timed references
ROTATE_MAX_BYTES = 256 << 20


@wp.kernel
def _fill_words(a: wp.array(dtype=wp.uint32), word: wp.uint32) -> None:  # type: ignore[valid-type]
    a[wp.tid()] = word


@wp.kernel
def _count_words(
    a: wp.array(dtype=wp.uint32),  # type: ignore[valid-type]
    word: wp.uint32,
    count: wp.array(dtype=wp.int64),  # type: ignore[valid-type]
) -> None:
    if a[wp.tid()] == word:
        wp.atomic_add(count, 0, wp.int64(1))


@wp.kernel
def _gather_words(
    a: wp.array(dtype=wp.uint32),  # type: ignore[valid-type]
    at: wp.array(dtype=wp.int64),  # type: ignore[valid-type]
    out: wp.array(dtype=wp.uint32),  # type: ignore[valid-type]
) -> None:
    i = wp.tid()
    out[i] = a[at[i]]


@wp.kernel
def _count_differing_words(
    a: wp.array(dtype=wp.uint32),  # type: ignore[valid-type]
    b: wp.array(dtype=wp.uint32),  # type: ignore[valid-type]
    count: wp.array(dtype=wp.int64),  # type: ignore[valid-type]
) -> None:
    i = wp.tid()
    if a[i] != b[i]:
        wp.atomic_add(count, 0, wp.int64(1))


def poison_word(np_dtype: Any) -> int | None:
    """The 32-bit word the poison of ``np_dtype`` repeats (None: not one repeated word)."""
    one = poison_like(np.empty(1, dtype=np_dtype))
    if one.nbytes % 4:
        return None
    words = one.view(np.uint32)
    return int(words[0]) if (words == words[0]).all() else None


def _words(arr: Any) -> Any:
    """A uint32 view of a contiguous Warp array's memory (no copy; given a pointer, Warp owns nothing)."""
    return wp.array(ptr=arr.ptr, dtype=wp.uint32, shape=(arr.capacity // 4,), device=arr.device)


def can_check(arr: Any, np_dtype: Any) -> bool:
    return bool(arr.is_contiguous) and arr.capacity % 4 == 0 and poison_word(np_dtype) is not None


def poison(arr: Any, np_dtype: Any) -> None:
    word = poison_word(np_dtype)
    assert word is not None
    words = _words(arr)
    TRUSTED.launch(_fill_words, dim=words.shape[0], inputs=[words, wp.uint32(word)], device=arr.device)


def unwritten_elements(arr: Any, np_dtype: Any) -> tuple[int, int]:
    """(how many scalars of ``arr`` still hold the poison, how many it has), counted on the
    device; scalars as ``arr.numpy()`` shows them (a vec4 is four float32s)."""
    word = poison_word(np_dtype)
    assert word is not None
    words = _words(arr)
    count = wp.zeros(1, dtype=wp.int64, device=arr.device)
    inputs = [words, wp.uint32(word), count]
    TRUSTED.launch(_count_words, dim=words.shape[0], inputs=inputs, device=arr.device)
    per_scalar = np.dtype(np_dtype).itemsize // 4
    return int(TRUSTED.array_numpy(count)[0]) // per_scalar, int(arr.capacity) // np.dtype(np_dtype).itemsize


def differing_words(a: Any, b: Any) -> int:
    """How many 32-bit words of two contiguous arrays of the same size on one device differ,
    counted there (a bitwise comparison: NaNs of the same bits are equal)."""
    wa, wb = _words(a), _words(b)
    if wa.shape != wb.shape:
        raise ValueError("arrays of different sizes")
    count = wp.zeros(1, dtype=wp.int64, device=a.device)
    TRUSTED.launch(_count_differing_words, dim=wa.shape[0], inputs=[wa, wb, count], device=a.device)
    return int(TRUSTED.array_numpy(count)[0])


def can_gather(arr: Any, np_dtype: Any) -> bool:
    """Whether ``gathered`` can read ``arr``'s scalars on its device: a contiguous CUDA array
    whose scalars are whole 32-bit words (float32, float64, the 32/64-bit integers, vectors of them)."""
    size = np.dtype(np_dtype).itemsize
    return (
        bool(getattr(arr.device, "is_cuda", False))
        and bool(arr.is_contiguous)
        and size % 4 == 0
        and arr.capacity % size == 0
    )


def gathered(arr: Any, np_dtype: Any, flat: np.ndarray) -> np.ndarray:
    """The scalars of ``arr`` at the flat indices ``flat`` (as ``arr.numpy().reshape(-1)[flat]``
    gives them: a vec4 is four float32s), gathered on the device: 4,096 elements read back
    instead of a 1 GiB output (``can_gather`` must hold)."""
    per_scalar = np.dtype(np_dtype).itemsize // 4
    words = _words(arr)
    at = (np.asarray(flat, dtype=np.int64)[:, None] * per_scalar + np.arange(per_scalar)).reshape(-1)
    at_dev: Any = wp.array(at, dtype=wp.int64, device=arr.device)
    out = wp.empty(at.size, dtype=wp.uint32, device=arr.device)
    TRUSTED.launch(_gather_words, dim=at.size, inputs=[words, at_dev, out], device=arr.device)
    got: np.ndarray = np.asarray(TRUSTED.array_numpy(out)).view(np.dtype(np_dtype))
    return got


def prefix_views(buffers: list[Any], shapes: list[tuple[int, ...] | None]) -> list[Any] | None:
    """Views of the first elements of each buffer with the given shapes (None for a non-array:
    kept as it is), or None when a shape is not a leading slice of its buffer's."""
    out = []
    for buf, shape in zip(buffers, shapes, strict=True):
        if shape is None:
            out.append(buf)
            continue
        full = tuple(buf.shape)
        if len(shape) != len(full) or shape[1:] != full[1:] or shape[0] > full[0] or not buf.is_contiguous:
            return None
        out.append(buf[: shape[0]])
    return out
