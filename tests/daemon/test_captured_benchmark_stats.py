"""When a captured launch's timing is a change (daemon/captured/benchmark_stats.py), on numbers:
the ratios of interleaved pairs of runs (accepted source, current source) against the spread unchanged
code shows on the machine."""

from __future__ import annotations

import math

import numpy as np
import pytest

from warp_harness.daemon.captured import benchmark_stats as S


def _times(median: float, spread: float, n: int = 50, seed: int = 0) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median * np.exp(rng.normal(0.0, spread, n)))


def _noise(rms: float, n: int, seed: int = 1) -> list[float]:
    return list(np.random.default_rng(seed).normal(0.0, rms, n))


def _pairs(
    ratio: float, spread: float, n: int, seed: int = 0, drift: float = 0.0
) -> list[tuple[list[float], list[float]]]:
    """``n`` pairs of runs of 20 launches; ``drift``: the machine's load, a factor on both runs of a pair
    that changes from pair to pair (a shared machine)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        load = math.exp(rng.normal(0.0, drift)) if drift else 1.0
        out.append(
            (
                _times(1e-3 * load, spread, 20, seed + 2 * k),
                _times(1e-3 * load * ratio, spread, 20, seed + 2 * k + 1),
            )
        )
    return out


def test_too_few_same_code_reruns_give_no_verdict() -> None:
    v = S.judge(_pairs(5.0, 0.01, S.REPORT_PAIRS), _noise(0.02, 1))
    assert v.kind == "unknown" and math.isinf(v.band) and v.ratio == pytest.approx(5, rel=0.05)
    assert not v.confirmed


def test_an_unchanged_kernel_is_the_same_and_a_much_slower_one_is_slower() -> None:
    noise = _noise(0.05, 20)
    assert S.judge(_pairs(1.0, 0.05, S.REPORT_PAIRS, seed=4), noise).kind == "same"
    slower = S.judge(_pairs(40.0, 0.05, S.REPORT_PAIRS, seed=4), noise)
    assert slower.kind == "slower" and slower.low > slower.band and slower.confirmed
    faster = S.judge(_pairs(0.3, 0.05, S.REPORT_PAIRS, seed=4), noise)
    assert faster.kind == "faster" and faster.high < 1 / faster.band and faster.confirmed
    assert "x the baseline (7 interleaved runs of both sources, each 38.1-40.8x" in slower.describe()
    assert "a 99.2% bound" in slower.describe()


def test_a_first_round_only_screens() -> None:
    """Three pairs beyond the band are a reason to measure again, not a report."""
    v = S.judge(_pairs(40.0, 0.05, S.FIRST_PAIRS), _noise(0.05, 20))
    assert v.kind == "slower" and v.pairs == S.FIRST_PAIRS and not v.confirmed
    assert 1 - 0.5**S.REPORT_PAIRS >= S.CONFIDENCE > 1 - 0.5 ** (S.REPORT_PAIRS - 1)


def test_the_threshold_is_the_machines_spread_not_a_fixed_percentage() -> None:
    """The same 1.3x change: a change on a quiet machine, within the spread on a noisy one."""
    pairs = _pairs(1.3, 0.01, S.REPORT_PAIRS, seed=6)
    quiet = S.judge(pairs, _noise(0.01, 30))
    noisy = S.judge(pairs, _noise(0.2, 30))
    assert quiet.kind == "slower" and noisy.kind == "same"
    assert quiet.band < 1.1 < 1.5 < noisy.band
    assert "1.3x the baseline" in quiet.describe() and "from 30 rerun(s)" in quiet.describe()


def test_a_load_that_comes_and_goes_falls_on_both_sides_of_a_pair() -> None:
    """A load that changes each run by up to ~2x (a shared machine): a baseline timed on a quiet
    moment against a run under load reads as a slowdown; interleaved pairs of the same code do not,
    and their own same-code log-ratios widen the band to the load of the moment."""
    pairs = _pairs(1.0, 0.05, S.REPORT_PAIRS, seed=12, drift=0.4)
    spread = S.same_code_log_ratios(pairs)
    assert len(spread) == 2 * (S.REPORT_PAIRS - 1)
    v = S.judge(pairs, _noise(0.02, 10) + spread)
    assert v.kind == "same" and 0.8 < v.ratio < 1.25
    # what a baseline timed at another moment would have seen: runs of the same code, across pairs
    unpaired = [float(np.median(new) / np.median(old)) for _, new in pairs for old, _ in pairs]
    assert max(unpaired) > 1.4  # the CI run's 1.45x: a false alarm against a stored baseline
    slower = S.judge(_pairs(50.0, 0.05, S.REPORT_PAIRS, seed=12, drift=0.4), _noise(0.02, 10) + spread)
    assert slower.kind == "slower" and slower.confirmed


def test_paired_ratios_skip_empty_runs() -> None:
    assert S.paired_ratios([([1e-3, 1e-3], [2e-3, 2e-3]), ([], [1e-3]), ([1e-3], [0.0])]) == [2.0]
    with pytest.raises(ValueError):
        S.judge([([], [])], _noise(0.02, 10))


def test_t_quantiles() -> None:
    assert S.t_quantile_995(1) == pytest.approx(63.657)
    assert S.t_quantile_995(10) == pytest.approx(3.169)
    assert S.t_quantile_995(11) == pytest.approx(3.169)  # a row between: the wider bound
    assert S.t_quantile_995(1000) == pytest.approx(2.576)
    assert math.isinf(S.t_quantile_995(0))


def test_the_band_uses_the_most_recent_reruns_only() -> None:
    old_calm = _noise(0.01, 200, seed=10)
    recent_noisy = _noise(0.3, S.NOISE_KEPT, seed=11)
    assert S.noise_bound(old_calm + recent_noisy) == pytest.approx(S.noise_bound(recent_noisy))
    assert S.noise_bound([0.1, float("nan")]) == math.inf  # one finite rerun is too few
