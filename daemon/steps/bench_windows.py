"""When the benchmark's timed windows on CUDA may stop (steps/bench.py).

A GPU has slow spells: on an H200 the same launch on the same buffers ran up to 7% slower in some
windows than in others a few hundred milliseconds away, at constant clocks (benchmarks/RESULTS.md,
runs 7-8). The time reported is therefore the best window's median, and the best of 15 windows 0.1 s
apart held the benchmark's repeatability (five runs' medians within 2%) where one window did not.
Those 15 windows cost about 2 s per kernel and device: on an H100, 1.6x the wall time of a
benchmark timed in one window (stream_large.py, 2026-12-07).

The windows stop early once the device shows its fast state steadily and no slow spell: the last
``agree`` windows' medians all within ``within`` (a fraction) of the best window's, and no window
so far more than ``SLOW_SPELL`` above it. A device in a slow spell gives windows that scatter by a
few per cent (1.5-7% on the H200), so it takes every window; a quiet one stops after ``agree``.
Agreement alone is not enough: a slow spell lasted 12 windows on the H200 (run 10, the vec4 copy:
0.5616, 0.5659, 0.5618, 0.5838, ..., then 0.5515 in window 13), and a rule that stopped on three
windows within 0.5% of each other missed 2% there. What no rule can tell from the device's speed is
a spell that is steady from the first window on (run 11, copy_f32: four windows within 0.26% of
each other, 1.1% above the other runs' best): the early stop reports it, within the 2% the
repeatability requirement allows.

Checked against every window recorded on the H200 (runs 10-11, default protocol: 6 sets of five
runs of 15 windows; tests/daemon/test_bench_windows.py): with ``agree = 4, within = 0.003`` every set
held as with all 15 windows (spreads 0.16-1.75%; run 11's copy_f32 0.29% -> 1.19%). Those were
noisy machines: 29 of the 30 runs still took all 15 windows (the one that stopped early is the
steady spell above); the quiet copy_f32 of run 10b stopped at 4 windows in 3 of 5 runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any


class WindowStop(str, Enum):
    """Why the timed windows ended (``windows_stop`` in a benchmark's figures)."""

    ONE = "one window"  # the CPU, or bench_windows = 1
    AGREED = "agreed"  # the last bench_windows_agree windows within bench_windows_within of the best
    ALL = "all windows"  # bench_windows taken: the windows disagreed (a slow spell) until the last
    TIME = "time limit"  # bench_max_time_s of timed launches reached first


SLOW_SPELL = 0.01  # a window this far above the best: a slow spell was seen (quiet windows: < 0.3%)


def agreed(medians: Sequence[float], agree: int, within: float) -> bool:
    """Whether the last ``agree`` (at least 2) window medians all lie within ``within`` of the
    fastest window's median so far, and none of the windows lies more than SLOW_SPELL above it."""
    agree = max(2, agree)
    if len(medians) < agree:
        return False
    best = min(medians)
    return max(medians[-agree:]) <= best * (1.0 + within) and max(medians) <= best * (1.0 + SLOW_SPELL)


def stop_after(medians: Sequence[float], most: int, agree: int, within: float) -> WindowStop | None:
    """The reason to stop after the windows timed so far (their medians, in order), or None to time
    another one. ``most`` windows at the most; ``agree`` >= ``most`` never stops early."""
    if most <= 1:
        return WindowStop.ONE
    if agree < most and agreed(medians, agree, within):
        return WindowStop.AGREED
    if len(medians) >= most:
        return WindowStop.ALL
    return None


def spread(medians: Sequence[float]) -> float:
    """How far the slowest window's median is above the fastest's, as a fraction."""
    return max(medians) / min(medians) - 1.0 if medians and min(medians) > 0 else 0.0


def describe(figures: Mapping[str, Any], within: float) -> str:
    """Why a benchmark's windows ended, in the words of its measured record (``figures``: its
    ``windows_stop`` and ``window_spread``)."""
    stop = figures.get("windows_stop")
    if stop == WindowStop.AGREED.value:
        return f"the last ones within {within * 100:g}% of the best"
    if stop == WindowStop.TIME.value:
        return "bench_max_time_s reached"
    return f"the most; {float(figures.get('window_spread') or 0.0) * 100:.1f}% apart"
