"""When a captured launch's timing is a change (daemon/captured/benchmark_stats.py), on numbers:
the ratio's bootstrap interval against the spread unchanged code shows on the machine."""

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


def test_the_bootstrap_interval_holds_the_ratio_and_narrows_with_cleaner_runs() -> None:
    base = _times(1e-3, 0.05, seed=2)
    new = _times(2e-3, 0.05, seed=3)
    ratio, lo, hi = S.bootstrap_ratio(new, base)
    assert lo < ratio < hi and lo < 2.0 < hi and hi / lo < 1.2
    noisy_ratio, noisy_lo, noisy_hi = S.bootstrap_ratio(_times(2e-3, 0.5, seed=3), _times(1e-3, 0.5, seed=2))
    assert noisy_lo < noisy_ratio < noisy_hi and noisy_hi / noisy_lo > 1.5
    with pytest.raises(ValueError):
        S.bootstrap_ratio([], base)


def test_t_quantiles() -> None:
    assert S.t_quantile_995(1) == pytest.approx(63.657)
    assert S.t_quantile_995(10) == pytest.approx(3.169)
    assert S.t_quantile_995(11) == pytest.approx(3.169)  # a row between: the wider bound
    assert S.t_quantile_995(1000) == pytest.approx(2.576)
    assert math.isinf(S.t_quantile_995(0))


def test_too_few_same_code_reruns_give_no_verdict() -> None:
    v = S.judge(_times(5e-3, 0.01), _times(1e-3, 0.01), _noise(0.02, 1))
    assert v.kind == "unknown" and math.isinf(v.band) and v.ratio == pytest.approx(5, rel=0.05)


def test_an_unchanged_kernel_is_the_same_and_a_much_slower_one_is_slower() -> None:
    noise = _noise(0.05, 20)
    assert S.judge(_times(1e-3, 0.05, seed=4), _times(1e-3, 0.05, seed=5), noise).kind == "same"
    slower = S.judge(_times(40e-3, 0.05, seed=4), _times(1e-3, 0.05, seed=5), noise)
    assert slower.kind == "slower" and slower.low > slower.band
    faster = S.judge(_times(0.3e-3, 0.05, seed=4), _times(1e-3, 0.05, seed=5), noise)
    assert faster.kind == "faster" and faster.high < 1 / faster.band


def test_the_threshold_is_the_machines_spread_not_a_fixed_percentage() -> None:
    """The same 1.3x change: a change on a quiet machine, within the spread on a noisy one."""
    new, base = _times(1.3e-3, 0.01, seed=6), _times(1e-3, 0.01, seed=7)
    quiet = S.judge(new, base, _noise(0.01, 30))
    noisy = S.judge(new, base, _noise(0.2, 30))
    assert quiet.kind == "slower" and noisy.kind == "same"
    assert quiet.band < 1.1 < 1.5 < noisy.band
    assert "1.31x the baseline" in quiet.describe() and "from 30 rerun(s)" in quiet.describe()


def test_a_wide_interval_is_no_verdict_even_beyond_the_band() -> None:
    """The medians differ by 1.5x but the runs themselves are too scattered to say so."""
    v = S.judge(_times(1.5e-3, 0.9, n=8, seed=8), _times(1e-3, 0.9, n=8, seed=9), _noise(0.02, 30))
    assert v.band < 1.1 and v.low < v.band and v.kind == "same"


def test_the_band_uses_the_most_recent_reruns_only() -> None:
    old_calm = _noise(0.01, 200, seed=10)
    recent_noisy = _noise(0.3, S.NOISE_KEPT, seed=11)
    assert S.noise_bound(old_calm + recent_noisy) == pytest.approx(S.noise_bound(recent_noisy))
    assert S.noise_bound([0.1, float("nan")]) == math.inf  # one finite rerun is too few
