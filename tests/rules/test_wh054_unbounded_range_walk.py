"""WH054: a ``while`` loop walks a run of equal keys with no check of the index against the end
(newton-physics/newton#3641)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bounds_trap import run_in_debug_mode
from checker_helpers import Analyse

from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def sum_run(keys: wp.array(dtype=int), values: wp.array(dtype=float), starts: wp.array(dtype=int),
            out: wp.array(dtype=float)):
    tid = wp.tid()
    start = starts[tid]
    key = keys[start]
    k = int(0)
    total = float(0.0)
    current = key
    while current == key:
        total += values[start + k]
        k += 1
        current = keys[start + k]
    out[tid] = total


def run():
    keys = wp.array(np.array([1, 2, 2], dtype=np.int32), dtype=int, device="cpu")
    values = wp.array(np.array([1.0, 2.0, 3.0], dtype=np.float32), dtype=float, device="cpu")
    starts = wp.array(np.array([1, 0], dtype=np.int32), dtype=int, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(sum_run, dim=2, inputs=[keys, values, starts, out], device="cpu")
    return out.numpy()
"""
GOOD = BAD.replace(
    "        k += 1\n",
    "        k += 1\n        if start + k >= keys.shape[0]:\n            break\n",
)

QUIET = """
import warp as wp


@wp.kernel
def bounded_by_test(keys: wp.array(dtype=int), n: int, out: wp.array(dtype=int)):
    k = int(0)
    while k < n and keys[k] != 0:
        k += 1
    out[0] = k


@wp.kernel
def linked_list(next_node: wp.array(dtype=int), out: wp.array(dtype=int)):
    node = next_node[0]
    count = int(0)
    while node != -1:
        count += 1
        node = next_node[node]
    out[0] = count


@wp.kernel
def counted(values: wp.array(dtype=float), out: wp.array(dtype=float)):
    k = int(0)
    total = float(0.0)
    while total < 10.0:
        total += values[k % values.shape[0]]
        k += 1
    out[0] = total
"""


def test_a_walk_that_stops_only_on_the_value_it_reads_is_a_warning(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH054"])
    assert record.severity is Severity.WARNING and "values[start + k]" in record.message
    assert analyse(GOOD, select=["WH054"]) == []


def test_bounded_tests_linked_lists_and_wrapped_indices_are_quiet(analyse: Analyse) -> None:
    assert analyse(QUIET, select=["WH054"]) == []


@pytest.mark.slow
def test_debug_mode_traps_the_walk_past_the_end_and_runs_the_fix(tmp_path: Path) -> None:
    bad, good = run_in_debug_mode(tmp_path, [BAD, GOOD])
    assert bad.trapped, bad.output[-1500:]
    np.testing.assert_allclose(good.result, [5.0, 1.0])  # type: ignore[arg-type]
