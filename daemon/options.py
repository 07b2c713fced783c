"""Runtime options of the dynamic tier: ``[tool.warp-harness.runtime]`` in pyproject.toml.

    [tool.warp-harness.runtime]
    devices = ["cpu", "cuda"]   # "cuda" = every CUDA device present; "cuda:1" = that one
    mode = "release"            # Warp build mode: "release" | "debug"
    fast_math = false           # None/absent: leave each module's own setting
    lineinfo = false
    optimization_level = 3      # absent: Warp's default per target
    max_unroll = 16
    timeout_s = 300             # whole job (import + codegen + compile + validation + benchmark)
    launch_timeout_s = 20       # one kernel launch (a hang is reported after this)
    memory_mb = 4096            # RLIMIT_AS of the worker (CPU-only runs) and its RSS limit
    validate = true
    bench = true
    bench_repeats = 50
    bench_max_time_s = 1.0
    bench_warmup = 3            # warm-up launches, and on CUDA at least bench_warmup_s of them
    bench_warmup_s = 0.1        # (an idle GPU clocks down; a few launches do not bring it back)
    bench_min_time_s = 0.25     # on CUDA, time launches for at least this long (50 launches of a
                                # 0.5 ms kernel: medians of 5 runs 2.8% apart on an H200; 0.2 s: 0.3%)
    bench_windows = 15          # on CUDA, in at most this many windows, bench_window_gap_s apart; the
    bench_window_gap_s = 0.1    # time is the best window's median (a GPU has slow spells: see bench.py)
    bench_windows_agree = 4     # ... fewer: stop once the last 4 windows' medians are all within
    bench_windows_within = 0.003  # 0.3% of the best window's (steps/bench_windows.py); 15: never
    bench_cold_l2 = false       # CUDA: also time launches after a 256 MB flush (warm and cold)
    verdict_worker = true       # references computed in a second worker that never runs a kernel,
                                # the outputs judged in the daemon (docs/reliability.md); a defence:
                                # only `--no-verdict-worker` turns it off, never a workspace's file
    isolate_modules = true      # a fresh worker for each module's job (saves of one module keep
                                # theirs): command line only (`--no-isolate-modules`), as above
    require_hermetic = false    # a verdict that is not hermetic (WHD069) is an error: command line
                                # only (`--require-hermetic`), as above
    seed = 1234                 # absent: a fresh seed per run (always recorded)
    shrink = true
    localize = true             # re-run bounds suspects in debug mode
    perf_severity = "error"     # severity of a missed performance target
    peak_bandwidth_gbs = { cpu = 20.0 }   # overrides the hardware profile
    peak_gflops = { cpu = 200.0 }
    profile = "calibrated.toml" # hardware profile for the peaks (a bundled name or a .toml path,
                                # e.g. one `warp-harness calibrate` wrote); absent: by device
    debounce_ms = 30            # quiet time after a file event before the save is checked
    kernel_cache_keep = 200     # pruned at daemon start: at most this many build folders ...
    kernel_cache_max_mb = 2048  # ... and at most this many MB, least recently used go first
    executor = "local"          # "ray": ci/bench/replay/tune jobs on a Ray cluster at `address`;
    address = "head:6379"       # read by daemon/executor.py, not options of a job: a workspace's
                                # choice of a cluster is used only with an explicit --trust

``debounce_ms`` here is the daemon's own: the ``debounce_ms`` of [tool.warp-harness] is the
language server's delay between keystrokes (100 ms); a save is one burst of file events a
few milliseconds long, whatever the editor's save style, so the daemon waits less.

The ``daemon`` key of [tool.warp-harness] is the language server's on/off switch, so the
daemon's own table is ``runtime``. Nothing here imports Warp.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from warp_harness.config import (
    MAX_DEBOUNCE_MS,
    ConfigError,
    _warn_once,
    find_pyproject,
    pyproject_data,
    show_value,
)
from warp_harness.daemon.pipeline import OPTIONAL

# options that change the binary Warp builds (part of every cache key)
COMPILE_KEYS = ("mode", "fast_math", "lineinfo", "optimization_level", "max_unroll", "enable_backward")


@dataclass(frozen=True)
class RuntimeOptions:
    devices: tuple[str, ...] = ("cpu",)
    mode: str = "release"
    fast_math: bool | None = None
    lineinfo: bool | None = None
    optimization_level: int | None = None
    max_unroll: int | None = None
    enable_backward: bool | None = None
    timeout_s: float = 300.0
    launch_timeout_s: float = 20.0
    memory_mb: int = 4096
    validate: bool = True
    bench: bool = True
    bench_repeats: int = 50
    bench_max_time_s: float = 1.0
    bench_warmup: int = 3
    bench_warmup_s: float = 0.1
    bench_min_time_s: float = 0.25
    bench_windows: int = 15
    bench_window_gap_s: float = 0.1
    bench_windows_agree: int = 4
    bench_windows_within: float = 0.003
    bench_cold_l2: bool = False
    verdict_worker: bool = True
    isolate_modules: bool = True  # a fresh worker for each module (a defence, like verdict_worker)
    require_hermetic: bool = False  # WHD069 (not hermetic) an error; command line only
    seed: int | None = None
    shrink: bool = True
    localize: bool = True
    perf_severity: str = "error"
    peak_bandwidth_gbs: Mapping[str, float] = field(default_factory=dict)
    peak_gflops: Mapping[str, float] = field(default_factory=dict)
    profile: str | None = None
    debounce_ms: int = 30
    kernel_cache_keep: int = 200
    kernel_cache_max_mb: int = 2048
    # the user's (command line) tolerances of the captured launches' behaviour diff; the workspace's
    # are read by daemon/captured/tolerances.py, which says when they are looser than the default
    replay_tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["devices"] = list(self.devices)
        data["peak_bandwidth_gbs"] = dict(self.peak_bandwidth_gbs)
        data["peak_gflops"] = dict(self.peak_gflops)
        data["replay_tolerances"] = {k: list(v) for k, v in self.replay_tolerances.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuntimeOptions:
        return cls().merged(data, where="runtime options")

    def merged(self, table: Mapping[str, Any], where: str = "overrides") -> RuntimeOptions:
        return replace(self, **_validate(table, where))

    def compile_options(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in COMPILE_KEYS}


_BOOL_OR_NONE = ("fast_math", "lineinfo", "enable_backward")
# an optional pipeline step is switched off by the option of its name (pipeline.OPTIONAL)
_BOOL = (
    *(step.value for step in OPTIONAL),
    "shrink",
    "localize",
    "bench_cold_l2",
    "verdict_worker",
    "isolate_modules",
    "require_hermetic",
)
_INT_OR_NONE = ("optimization_level", "max_unroll", "seed")
_POS_INT = (
    "memory_mb",
    "bench_repeats",
    "bench_windows",
    "bench_windows_agree",
    "kernel_cache_keep",
    "kernel_cache_max_mb",
)
_NONNEG_INT = ("bench_warmup", "debounce_ms")
_POS_FLOAT = ("timeout_s", "launch_timeout_s", "bench_max_time_s")
_NONNEG_FLOAT = ("bench_warmup_s", "bench_min_time_s", "bench_window_gap_s")
_FRACTION = ("bench_windows_within",)  # 0 <= value < 1
# beyond these a value only overflows somewhere (rlimits, timers, float conversion)
MAX_INT = 2**62
MAX_SECONDS = 1e7


# keys of [tool.warp-harness.runtime] other readers take: `warp-harness capture` (capture/cli.py), the
# executor choice (executor.py)
_READ_ELSEWHERE = frozenset({"capture", "executor", "address", "tolerances"})


def _number_ok(value: Any, key: str) -> bool:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) <= MAX_INT
    return math.isfinite(value) and (key not in _POS_FLOAT + _NONNEG_FLOAT or value <= MAX_SECONDS)


def _validate(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    known = {f.name for f in fields(RuntimeOptions)}
    out: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        if key not in known:
            # still ignored (a newer config keeps working with an older version), but said once; `capture`
            # is read by `warp-harness capture` (warp_harness/capture/cli.py)
            if key not in _READ_ELSEWHERE and where != "overrides":
                close = difflib.get_close_matches(key, sorted(known), n=1)
                maybe = f" (did you mean `{close[0].replace('_', '-')}`?)" if close else ""
                _warn_once(f"{where}: unknown key `{raw_key}`{maybe}; ignored")
            continue
        if key == "devices":
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list | tuple) or not value or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: `devices` must be a non-empty list of device names")
            for v in value:
                if v != "cpu" and v != "cuda" and not (v.startswith("cuda:") and v[5:].isdigit()):
                    raise ConfigError(f"{where}: unknown device {show_value(v)}; use cpu, cuda or cuda:N")
            out[key] = tuple(dict.fromkeys(value))
        elif key == "mode":
            if value not in ("release", "debug"):
                raise ConfigError(f'{where}: `mode` must be "release" or "debug", got {show_value(value)}')
            out[key] = value
        elif key == "perf_severity":
            if value not in ("error", "warning", "info"):
                raise ConfigError(f"{where}: `perf_severity` must be error, warning or info")
            out[key] = value
        elif key == "profile":
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(
                    f"{where}: `profile` must be a profile name or a .toml path, got {show_value(value)}"
                )
            out[key] = value
        elif key in _BOOL_OR_NONE or key in _BOOL:
            if not isinstance(value, bool) and not (value is None and key in _BOOL_OR_NONE):
                raise ConfigError(f"{where}: `{key}` must be true or false, got {show_value(value)}")
            out[key] = value
        elif key in _INT_OR_NONE or key in _POS_INT or key in _NONNEG_INT:
            if value is None and key in _INT_OR_NONE:
                out[key] = None
                continue
            if not isinstance(value, int) or not _number_ok(value, key):
                raise ConfigError(f"{where}: `{key}` must be an integer up to 2**62, got {show_value(value)}")
            if (key in _POS_INT and value < 1) or (key in _NONNEG_INT and value < 0):
                raise ConfigError(f"{where}: `{key}` must be positive, got {value!r}")
            if key == "debounce_ms" and value > MAX_DEBOUNCE_MS:
                raise ConfigError(
                    f"{where}: `debounce_ms` must be at most {MAX_DEBOUNCE_MS}, got {show_value(value)}"
                )
            out[key] = value
        elif key in _POS_FLOAT:
            if not _number_ok(value, key) or value <= 0:
                raise ConfigError(
                    f"{where}: `{key}` must be a positive number of seconds, got {show_value(value)}"
                )
            out[key] = float(value)
        elif key in _NONNEG_FLOAT:
            if not _number_ok(value, key) or value < 0:
                raise ConfigError(
                    f"{where}: `{key}` must be a number of seconds >= 0, got {show_value(value)}"
                )
            out[key] = float(value)
        elif key in _FRACTION:
            if not _number_ok(value, key) or not 0 <= value < 1:
                raise ConfigError(
                    f"{where}: `{key}` must be a fraction >= 0 and < 1, got {show_value(value)}"
                )
            out[key] = float(value)
        elif key in ("peak_bandwidth_gbs", "peak_gflops"):
            if not isinstance(value, Mapping) or not all(
                _number_ok(v, key) and v > 0 for v in value.values()
            ):
                raise ConfigError(f"{where}: `{key}` must be a table of device = positive number")
            out[key] = {str(k): float(v) for k, v in value.items()}
        elif key == "replay_tolerances":  # daemon/captured/tolerances.py
            from warp_harness.daemon.captured.tolerances import parse_flags, parse_table

            is_flags = isinstance(value, list) and all(isinstance(v, str) for v in value)
            out[key] = parse_flags(value) if is_flags else parse_table(value, where)
    return out


# Options that switch off a defence of the evaluator (daemon/verdict.py): the workspace is the
# code under test, so its pyproject.toml cannot set them (as the language server never takes
# `trust` from it); the command line (the user) can.
DEFENCES = ("verdict_worker", "isolate_modules")
# Options the command line alone sets, either way (a workspace's value is ignored, one line on stderr)
COMMAND_LINE_ONLY = ("require_hermetic", "replay_tolerances")  # a workspace's: its `tolerances` table


def _without_defences(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``table`` less the keys a workspace may not set (one line on stderr for each one that
    would weaken the evaluator)."""
    out = dict(table)
    for raw_key in list(out):
        if raw_key.replace("-", "_") in COMMAND_LINE_ONLY:
            value = out.pop(raw_key)
            print(
                f"warp-harness: {where}: `{raw_key} = {_toml(value)}` ignored: only the command line "
                f"sets it (--{raw_key.replace('_', '-')})",
                file=sys.stderr,
            )
            continue
        if raw_key.replace("-", "_") not in DEFENCES:
            continue
        value = out.pop(raw_key)
        if value is not True:
            print(
                f"warp-harness: {where}: `{raw_key} = {_toml(value)}` ignored: a workspace cannot "
                "switch off the evaluator's defences "
                f"(use --no-{raw_key.replace('_', '-')} on the command line)",
                file=sys.stderr,
            )
    return out


def _toml(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else show_value(value)


def load_runtime_options(start: Path, overrides: Mapping[str, Any] | None = None) -> RuntimeOptions:
    """``[tool.warp-harness.runtime]`` of the nearest warp-harness pyproject (less the defences,
    ``DEFENCES``), then ``overrides`` (the command line's).

    The same file as the settings' (config.find_pyproject: within the repository, and only one
    that no other user can have written), read through the same size-capped, cached reader.
    """
    options = RuntimeOptions()
    pyproject = find_pyproject(start)
    if pyproject is not None:
        data = pyproject_data(pyproject) or {}
        harness = data.get("tool", {}).get("warp-harness", {})
        if not isinstance(harness, Mapping):
            raise ConfigError(f"{pyproject}: [tool.warp-harness] must be a table")
        table = harness.get("runtime", {})
        if not isinstance(table, Mapping):
            raise ConfigError(f"{pyproject}: [tool.warp-harness.runtime] must be a table")
        where = f"{pyproject} [tool.warp-harness.runtime]"
        options = options.merged(_without_defences(table, where), where=where)
    if overrides:
        options = options.merged(overrides)
    return options
