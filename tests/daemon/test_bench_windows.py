"""When the benchmark's timed windows on CUDA stop (daemon/steps/bench_windows.py), on synthetic
window medians and on every window recorded on an H200 (benchmarks/gpu-runs/, runs 10-11: the
device's slow spells, benchmarks/RESULTS.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warp_harness.config import ConfigError
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.steps.bench_windows import WindowStop, agreed, describe, spread, stop_after

RUNS = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu-runs"
DEFAULTS = RuntimeOptions()


def _stop(medians: list[float], most: int = 15) -> WindowStop | None:
    return stop_after(medians, most, DEFAULTS.bench_windows_agree, DEFAULTS.bench_windows_within)


def test_a_quiet_device_stops_after_four_windows_that_agree() -> None:
    assert _stop([1.0]) is None and _stop([1.0, 1.001, 1.0]) is None  # fewer than 4 windows
    assert _stop([1.0, 1.001, 1.0, 1.002]) is WindowStop.AGREED
    # a first window a little slow (after the warm-up) is left behind: the last 4 agree with the best
    assert _stop([1.006, 1.0, 1.001, 1.0, 1.002]) is WindowStop.AGREED
    assert _stop([1.006, 1.0, 1.001, 1.0]) is None  # the 1.006 is among the last four


def test_windows_that_scatter_take_every_window() -> None:
    """A slow spell (a window over 1% above the best) is not stopped on, however well the windows
    after it agree with each other: the H200 held one for 12 windows (run 10) before its fast state."""
    spell = [1.030, 1.045, 1.031, 1.040, 1.033, 1.032, 1.030, 1.031, 1.030, 1.036, 1.031, 1.040, 1.0, 1.002]
    assert all(_stop(spell[:n]) is None for n in range(1, len(spell) + 1))
    assert _stop([*spell, 1.001]) is WindowStop.ALL
    assert agreed([1.02, 1.0, 1.001, 1.0, 1.0], 4, 0.003) is False  # 2% above the best: a spell
    assert agreed([1.009, 1.0, 1.001, 1.0, 1.0], 4, 0.003) is True  # under SLOW_SPELL: noise


def test_the_limits_of_the_rule() -> None:
    # what the rule cannot tell from the device's speed: a spell steady from the first window on
    # (run 11's copy_f32, 1.1% above the best of the other runs)
    assert _stop([0.9308, 0.9299, 0.9302, 0.9284]) is WindowStop.AGREED
    assert stop_after([1.0, 1.0, 1.0, 1.0], 15, 15, 0.003) is None  # agree >= most: never early
    assert stop_after([1.0, 1.05, 1.0], 3, 15, 0.003) is WindowStop.ALL
    assert stop_after([1.0], 1, 4, 0.003) is WindowStop.ONE
    assert agreed([1.0, 1.0], 1, 0.0) is True  # at least two windows, whatever agree says
    assert spread([1.0, 1.05, 1.02]) == pytest.approx(0.05) and spread([]) == 0.0


def test_the_measured_record_says_why_the_windows_ended() -> None:
    assert describe({"windows_stop": "agreed"}, 0.003) == "the last ones within 0.3% of the best"
    assert describe({"windows_stop": "all windows", "window_spread": 0.0312}, 0.003) == "the most; 3.1% apart"
    assert describe({"windows_stop": "time limit"}, 0.003) == "bench_max_time_s reached"


def _recorded() -> dict[str, list[list[float]]]:
    """Every set of five runs timed in the default protocol (15 windows 0.1 s apart) on the H200:
    '<run>/<kernel>' -> each run's window medians."""
    sets: dict[str, list[list[float]]] = {}
    for path in sorted(RUNS.glob("2026-12-03-run1[01]*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("bench_overrides", {}).get("bench_window_gap_s", 0.1) != 0.1:
            continue  # run 10b: 25 windows with no gap, another protocol
        for kernel, row in data["repeatability"].items():
            sets[f"{path.stem}/{kernel}"] = [run["window_medians_s"] for run in row["runs"]]
    return sets


def test_the_recorded_h200_windows_keep_the_repeatability_of_all_fifteen() -> None:
    """Replayed on the window medians the H200 gave (runs 10-11), the early stop reports, for each
    kernel's five runs, medians within 2% of each other (the repeatability requirement), as the
    best of all 15 windows did; and it stops early where the windows agree."""
    sets = _recorded()
    assert len(sets) == 6 and all(len(runs) == 5 and len(runs[0]) == 15 for runs in sets.values())
    taken: list[int] = []
    for name, runs in sets.items():
        reported = []
        for windows in runs:
            n = next(n for n in range(1, 16) if _stop(windows[:n]) is not None)
            taken.append(n)
            reported.append(min(windows[:n]))
        assert spread(reported) < 0.02, (name, reported)
        assert spread(reported) <= max(spread([min(w) for w in runs]), 0.012), name
    assert min(taken) == DEFAULTS.bench_windows_agree and taken.count(15) == 29


def test_the_options_of_the_early_stop() -> None:
    opts = RuntimeOptions().merged({"bench_windows_agree": 15, "bench_windows_within": 0})
    assert opts.bench_windows_agree == 15 and opts.bench_windows_within == 0.0
    assert RuntimeOptions.from_dict(opts.to_dict()) == opts
    for bad in ({"bench_windows_within": 1}, {"bench_windows_within": -0.1}, {"bench_windows_agree": 0}):
        with pytest.raises(ConfigError):
            RuntimeOptions().merged(bad)
    with pytest.raises(ConfigError, match="fraction"):
        RuntimeOptions().merged({"bench_windows_within": "0.5%"})
