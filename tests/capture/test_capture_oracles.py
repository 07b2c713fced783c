"""The replay's oracles (numpy only, in the process that runs no workspace code)."""

from __future__ import annotations

import numpy as np

from warp_harness.daemon.captured import oracles


def _poisoned(values: list[float], left: list[int]) -> np.ndarray:
    out = np.array(values, np.float32)
    marked = oracles.poison(out)
    assert marked is not None
    out[left] = marked[left]
    return out


def test_unwritten_elements_are_those_the_recorded_run_wrote() -> None:
    before = np.zeros(6, np.float32)
    baseline = np.array([0, 2, 4, 6, 8, 10], np.float32)
    replay = _poisoned([0, 2, 4, 0, 0, 0], [3, 4, 5])  # a guard now skips i >= 3
    (f,) = oracles.judge_array("y", before, baseline, replay, was_poisoned=True, inputs_finite=True)
    assert (f.kind, f.count, f.first_index) == ("unwritten", 3, (3,))


def test_a_kernel_that_writes_some_elements_is_not_flagged() -> None:
    """Element 0 is written with the value it had (0.0): neither run changed it; a poisoned element
    the recorded run did not change counts as untouched, not as unwritten or different."""
    before = np.zeros(4, np.float32)
    baseline = np.array([0, 5, 0, 7], np.float32)
    replay = _poisoned([0, 5, 0, 7], [0, 2])
    assert oracles.judge_array("y", before, baseline, replay, was_poisoned=True, inputs_finite=True) == []


def test_a_changed_result_reports_count_errors_and_first_index() -> None:
    baseline = np.arange(8, dtype=np.float32)
    replay = baseline.copy()
    replay[5:] += 0.5
    (f,) = oracles.judge_array("y", baseline * 0, baseline, replay, was_poisoned=False, inputs_finite=True)
    assert (f.kind, f.count, f.first_index) == ("diff", 3, (5,))
    assert f.max_abs == 0.5 and abs(f.max_rel - 0.5 / 5) < 1e-9


def test_float32_rounding_is_within_tolerance_and_ints_are_exact() -> None:
    baseline = np.linspace(1, 2, 16, dtype=np.float32)
    noisy = baseline * np.float32(1 + 1e-6)
    assert oracles.judge_array("y", baseline, baseline, noisy, was_poisoned=False, inputs_finite=True) == []
    ints = np.arange(4, dtype=np.int32)
    (f,) = oracles.judge_array(
        "n", ints, ints, ints + np.array([0, 0, 1, 0], np.int32), was_poisoned=False, inputs_finite=True
    )
    assert f.kind == "diff" and f.first_index == (2,)


def test_new_nan_from_finite_inputs() -> None:
    """A NaN the kernel computes is not the poison's marked NaN: non-finite, not unwritten."""
    baseline = np.ones(4, np.float32)
    replay = np.array([1, np.inf, 1, np.nan], np.float32)
    found = oracles.judge_array("y", baseline, baseline, replay, was_poisoned=False, inputs_finite=True)
    assert [f.kind for f in found] == ["nonfinite"] and found[0].count == 2
    found = oracles.judge_array("y", baseline * 0, baseline, replay, was_poisoned=True, inputs_finite=True)
    assert [f.kind for f in found] == ["nonfinite"]


def test_integer_poison_and_vector_arrays() -> None:
    before = np.zeros((3, 3), np.float32)  # a wp.vec3 array of 3
    baseline = np.ones((3, 3), np.float32)
    poisoned = oracles.poison(before)
    assert poisoned is not None and np.isnan(poisoned).all()
    replay = baseline.copy()
    replay[2] = poisoned[2]
    (f,) = oracles.judge_array("v", before, baseline, replay, was_poisoned=True, inputs_finite=True)
    assert f.kind == "unwritten" and f.count == 3 and f.first_index == (2, 0)
    ints = oracles.poison(np.zeros(2, np.int32))
    assert ints is not None and oracles.poisoned_mask(ints).all()
