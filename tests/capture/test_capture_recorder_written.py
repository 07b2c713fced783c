"""Which arrays a recorded launch wrote: those whose bytes changed, compared without copying the
unchanged ones (warp_harness/capture/recorder.py). Bytes, not values: a NaN left alone is unchanged,
a zero whose sign flipped is written."""

from __future__ import annotations

import numpy as np

from warp_harness.capture.recorder import _same_bytes


def test_bytes_decide_what_was_written() -> None:
    before = np.array([1.0, np.nan, 0.0], dtype=np.float32)
    assert _same_bytes(before.copy(), before)  # NaN == NaN by bytes
    flipped = before.copy()
    flipped[2] = -0.0
    assert not _same_bytes(flipped, before)  # -0.0 == 0.0 by value, not by bytes
    assert not _same_bytes(before.reshape(3, 1), before)
    vectors = np.zeros((4, 3), dtype=np.float32)
    assert _same_bytes(vectors[::2], np.zeros((2, 3), dtype=np.float32))  # a strided view
    assert not _same_bytes(np.zeros(3, dtype=np.float64), np.zeros(3, dtype=np.float32))
