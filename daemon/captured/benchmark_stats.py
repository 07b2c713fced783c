"""When is a captured launch's new timing a change? Numbers only (no Warp, no files).

Two measured quantities decide it, no fixed percentage:

- the **ratio** new/baseline of the two runs' median launch times, with a bootstrap confidence
  interval (both runs' launch times resampled with replacement, the ratio of medians each time;
  the percentile interval at ``CONFIDENCE``);
- the **spread of this machine**: the log-ratios between two runs of the *same* kernel source on
  this machine (``noise``: every rerun of an unchanged source adds one). Under "same code", a new
  log-ratio is drawn from that spread; its prediction bound is ``t(CONFIDENCE, n) * rms(noise)``
  (Student's t with n degrees of freedom: the mean of a same-code log-ratio is 0 by definition, so
  the spread is estimated about 0 and no degree of freedom is spent on a mean).

A launch is **slower** when the whole confidence interval of its ratio lies above
``exp(bound)``, **faster** when it lies below ``exp(-bound)``; otherwise its change is within what
the machine does to unchanged code, and nothing is reported. With fewer than ``MIN_NOISE``
same-code reruns the spread is unknown and nothing is reported either (the verdict says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.99  # two-sided, for both the bootstrap interval and the machine's prediction bound
BOOTSTRAP_RESAMPLES = 2000
MIN_NOISE = 2  # same-code reruns needed before any verdict
NOISE_KEPT = 64  # the machine's most recent same-code log-ratios (its load changes over a day)

# Student's t quantile at 0.995 (two-sided 99%) by degrees of freedom; between rows the next
# smaller row is used (a wider bound), beyond the last the normal quantile
_T_995: tuple[tuple[int, float], ...] = (
    (1, 63.657), (2, 9.925), (3, 5.841), (4, 4.604), (5, 4.032), (6, 3.707), (7, 3.499),
    (8, 3.355), (9, 3.250), (10, 3.169), (12, 3.055), (15, 2.947), (20, 2.845), (25, 2.787),
    (30, 2.750), (40, 2.704), (60, 2.660), (120, 2.617),
)  # fmt: skip
_Z_995 = 2.576


def t_quantile_995(dof: int) -> float:
    """Student's t at 0.995 with ``dof`` degrees of freedom (rounded down to a tabulated row)."""
    if dof < 1:
        return math.inf
    if dof > _T_995[-1][0]:
        return _Z_995
    return next(t for d, t in reversed(_T_995) if d <= dof)


def bootstrap_ratio(
    new: Sequence[float], base: Sequence[float], *, seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float, float]:
    """(ratio of medians new/base, lower, upper bound of its ``CONFIDENCE`` percentile interval)."""
    a = np.asarray(new, dtype=np.float64)
    b = np.asarray(base, dtype=np.float64)
    if a.size == 0 or b.size == 0 or not (a > 0).all() or not (b > 0).all():
        raise ValueError("two non-empty runs of positive times are needed")
    rng = np.random.default_rng(seed)
    ra = np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1)
    rb = np.median(b[rng.integers(0, b.size, (resamples, b.size))], axis=1)
    ratios = ra / rb
    tail = (1.0 - CONFIDENCE) / 2
    lo, hi = np.quantile(ratios, [tail, 1.0 - tail])
    return float(np.median(a) / np.median(b)), float(lo), float(hi)


def noise_bound(noise: Sequence[float]) -> float:
    """The prediction bound of a same-code log-ratio on this machine (inf: too few reruns)."""
    values = [float(x) for x in noise if math.isfinite(x)][-NOISE_KEPT:]
    if len(values) < MIN_NOISE:
        return math.inf
    rms = math.sqrt(sum(x * x for x in values) / len(values))
    return t_quantile_995(len(values)) * rms


@dataclass(frozen=True)
class Verdict:
    kind: str  # slower | faster | same | unknown (too few same-code reruns on this machine)
    ratio: float
    low: float  # the ratio's confidence interval
    high: float
    band: float  # same-code ratios on this machine lie within [1/band, band] (inf: unknown)
    reruns: int  # same-code reruns the band was estimated from

    def describe(self) -> str:
        band = f"{self.band:.3g}x" if math.isfinite(self.band) else "unknown"
        return (
            f"{self.ratio:.3g}x the baseline (99% interval {self.low:.3g}-{self.high:.3g}x; unchanged code "
            f"on this machine varies within {band}, from {self.reruns} rerun(s))"
        )


def judge(new: Sequence[float], base: Sequence[float], noise: Sequence[float], *, seed: int = 0) -> Verdict:
    """``new`` and ``base``: launch times (s) of the two runs; ``noise``: the machine's same-code
    log-ratios."""
    ratio, lo, hi = bootstrap_ratio(new, base, seed=seed)
    bound = noise_bound(noise)
    reruns = min(len([x for x in noise if math.isfinite(x)]), NOISE_KEPT)
    band = math.exp(bound) if math.isfinite(bound) else math.inf
    if not math.isfinite(bound):
        kind = "unknown"
    elif lo > band:
        kind = "slower"
    elif hi < 1.0 / band:
        kind = "faster"
    else:
        kind = "same"
    return Verdict(kind, ratio, lo, hi, band, reruns)
