"""WH046: an atomic's returned old value stored back into the element it updated."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def clamp(x: wp.array(dtype=float), counts: wp.array2d(dtype=int), hi: float):
    tid = wp.tid()
    x[tid] = wp.atomic_min(x, tid, hi)
    counts[0, tid] = wp.atomic_add(counts, 0, tid, 1)


def run():
    x = wp.array(np.array([50.0, 1.0], dtype=np.float32), dtype=float, device="cpu")
    counts = wp.zeros((1, 2), dtype=int, device="cpu")
    wp.launch(clamp, dim=2, inputs=[x, counts, 9.0], device="cpu")
    return np.concatenate([x.numpy(), counts.numpy()[0]])
"""

GOOD = """
import numpy as np
import warp as wp


@wp.kernel
def place(x: wp.array(dtype=float), counter: wp.array(dtype=int), slot: wp.array(dtype=int), hi: float):
    tid = wp.tid()
    wp.atomic_min(x, tid, hi)
    slot[tid] = wp.atomic_add(counter, 0, 1)
    x[tid] = wp.atomic_max(x, 0, 0.0)


def run():
    return np.zeros(1)
"""


def test_the_old_value_stored_back_is_an_error_with_a_safe_fix(analyse: Analyse) -> None:
    first, second = analyse(BAD, select=["WH046"])
    assert first.severity is Severity.ERROR and first.location.line == 9
    assert second.location.line == 10
    fixed, applied = apply_fixes(BAD, [first, second])
    assert applied == 2 and "    wp.atomic_min(x, tid, hi)\n" in fixed
    assert "    wp.atomic_add(counts, 0, tid, 1)\n" in fixed
    assert analyse(fixed, select=["WH046"]) == []
    assert warp_error(fixed) is None


def test_old_values_kept_elsewhere_are_fine(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH046"]) == []
    assert warp_error(GOOD) is None


@pytest.mark.slow
def test_warp_undoes_the_update_and_the_fix_keeps_it(analyse: Analyse) -> None:
    assert warp_error(BAD) is None
    assert np.allclose(run_source(BAD), [50.0, 1.0, 0, 0])  # neither the clamp nor the counts stick
    fixed, _ = apply_fixes(BAD, analyse(BAD, select=["WH046"]))
    assert np.allclose(run_source(fixed), [9.0, 1.0, 1, 1])
