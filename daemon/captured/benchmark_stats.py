"""When is a captured launch's new timing a change? Numbers only (no Warp, no files).

Two measured quantities decide it, no fixed percentage:

- the **ratio** current/accepted of a kernel's launch times, measured as interleaved pairs: in one
  job the worker builds the kernel's accepted source and its current one and times each captured
  launch with one, then the other, alternating which goes first (``benchmark_worker``), so a load
  that comes and goes on a shared machine falls on both sides. Each pair gives a ratio of medians;
  under "no change" each is as likely to lie above 1 as below it, so the smallest of n pairs is a
  lower confidence bound of the slowdown at ``1 - 2**-n`` (an order statistic, no assumption on how
  the times are distributed), the largest an upper bound;
- the **spread of this machine**: the log-ratios between two runs of the *same* kernel source on
  this machine (``noise``: every rerun of an unchanged source adds one, and so do the runs of the
  same source within a paired job, measured under the load of that moment). Under "same code", a
  new log-ratio is drawn from that spread; its prediction bound is ``t(CONFIDENCE, n) * rms(noise)``
  (Student's t with n degrees of freedom: the mean of a same-code log-ratio is 0 by definition, so
  the spread is estimated about 0 and no degree of freedom is spent on a mean).

A launch is **slower** when every paired ratio lies above ``exp(bound)``, **faster** when every one
lies below ``exp(-bound)``, with at least ``REPORT_PAIRS`` pairs (``1 - 2**-7``: above
``CONFIDENCE``): a first round of ``FIRST_PAIRS`` only screens, and a launch it finds beyond the
band is measured again before anything is reported. Otherwise its change is within what the machine
does to unchanged code, and nothing is reported. With fewer than ``MIN_NOISE`` same-code reruns
the spread is unknown and nothing is reported either (the verdict says so).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.99  # two-sided, for both the bootstrap interval and the machine's prediction bound
FIRST_PAIRS = 3  # interleaved pairs of a changed kernel's first measurement: a screen
REPORT_PAIRS = 7  # pairs a report rests on: all 7 beyond the band by chance with probability 2**-7
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
    ratio: float  # the median paired ratio
    low: float  # the smallest and the largest paired ratio: the confidence bounds
    high: float
    band: float  # same-code ratios on this machine lie within [1/band, band] (inf: unknown)
    reruns: int  # same-code reruns the band was estimated from
    pairs: int  # interleaved pairs measured

    @property
    def confirmed(self) -> bool:
        """A change measured on enough pairs to be reported."""
        return self.kind in ("slower", "faster") and self.pairs >= REPORT_PAIRS

    def describe(self) -> str:
        band = f"{self.band:.3g}x" if math.isfinite(self.band) else "unknown"
        confidence = 1.0 - 0.5**self.pairs
        return (
            f"{self.ratio:.3g}x the baseline ({self.pairs} interleaved runs of both sources, each "
            f"{self.low:.3g}-{self.high:.3g}x: a {confidence:.1%} bound; unchanged code on this machine "
            f"varies within {band}, from {self.reruns} rerun(s))"
        )


def paired_ratios(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[float]:
    """median(current) / median(accepted) of each (accepted times, current times) pair."""
    out: list[float] = []
    for old, new in pairs:
        a = np.asarray([t for t in old if t > 0], dtype=np.float64)
        b = np.asarray([t for t in new if t > 0], dtype=np.float64)
        if a.size and b.size:
            out.append(float(np.median(b) / np.median(a)))
    return out


def same_code_log_ratios(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[float]:
    """The log-ratios between consecutive runs of the same source within paired measurements:
    the machine's spread under the load of that moment."""
    out: list[float] = []
    for side in (0, 1):
        medians = [float(np.median(p[side])) for p in pairs if len(p[side]) and min(p[side]) > 0]
        out += [math.log(b / a) for a, b in itertools.pairwise(medians)]
    return out


def judge(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], noise: Sequence[float]) -> Verdict:
    """``pairs``: (accepted times, current times) of interleaved runs (s); ``noise``: the
    machine's same-code log-ratios."""
    ratios = paired_ratios(pairs)
    if not ratios:
        raise ValueError("no pair of positive times")
    bound = noise_bound(noise)
    reruns = min(len([x for x in noise if math.isfinite(x)]), NOISE_KEPT)
    band = math.exp(bound) if math.isfinite(bound) else math.inf
    low, high = min(ratios), max(ratios)
    if not math.isfinite(bound):
        kind = "unknown"
    elif low > band:
        kind = "slower"
    elif high < 1.0 / band:
        kind = "faster"
    else:
        kind = "same"
    return Verdict(kind, float(np.median(ratios)), low, high, band, reruns, len(ratios))
