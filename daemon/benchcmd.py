"""``warp-harness bench``: the benchmark stage, headless, for every contracted kernel.

It runs the daemon's own worker (import, codegen, compile, validation, then the benchmark
stage), so the workspace's code executes: it needs trust exactly as ``ci`` does. A kernel
is timed only after it matches its reference. The table: kernel, device, size, median,
spread (IQR, and min..max), GB/s (GFLOP/s), % of the profile's peak, target verdicts.

Exit codes: 0 every contracted kernel validated, was timed and meets its targets; 1 a
kernel failed validation or missed a target; 2 a usage/configuration problem (untrusted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.config import load_settings
from warp_harness.daemon import discovery
from warp_harness.daemon import findings as F
from warp_harness.daemon.executor import ExecutorChoice
from warp_harness.daemon.options import RuntimeOptions, load_runtime_options
from warp_harness.daemon.results import CheckReport
from warp_harness.record import Severity, Stage


class NotTrusted(RuntimeError):
    pass


@dataclass
class BenchRow:
    path: str
    kernel: str
    device: str
    status: str  # timed | validate:<verdict> | not-run
    size: int | None = None
    median_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    iqr_s: float | None = None
    repeats: int | None = None
    timer: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    targets: list[dict[str, Any]] = field(default_factory=list)  # {target, value, verdict}
    windows: int | None = None  # CUDA: timed windows taken, and why they stopped (steps/bench_windows.py)
    windows_stop: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "timed" and all(t["verdict"] != "missed" for t in self.targets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kernel": self.kernel,
            "device": self.device,
            "status": self.status,
            "size": self.size,
            "median_s": self.median_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "iqr_s": self.iqr_s,
            "repeats": self.repeats,
            "timer": self.timer,
            "metrics": dict(self.metrics),
            "targets": list(self.targets),
            "windows": self.windows,
            "windows_stop": self.windows_stop,
        }


@dataclass
class BenchOutcome:
    rows: list[BenchRow]
    files: list[str]
    problems: list[dict[str, Any]]  # error records of the dynamic tier (compile errors, crashes ...)
    options: RuntimeOptions
    notes: list[str] = field(default_factory=list)  # e.g. a configured device that is not present
    # performance warnings of the dynamic tier (an implausible measurement, a missed target): `ci` and the
    # MCP `bench` tool report them, and so must the table
    warnings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.rows) and all(r.ok for r in self.rows) and not self.problems


def rows_of(report: CheckReport) -> list[BenchRow]:
    """One row per (contracted kernel, device) of a check result."""
    rows: list[BenchRow] = []
    path = report.path
    devices = list(report.devices)
    for name, summary in sorted(report.kernels.items()):
        if not summary.get("contract"):
            continue
        bench = summary.get("bench") or {}
        validate = summary.get("validate") or {}
        for alias in devices or sorted(set(bench) | set(validate)):
            m = bench.get(alias)
            if m is None:
                verdict = validate.get(alias)
                rows.append(BenchRow(path, name, alias, f"validate:{verdict}" if verdict else "not-run"))
                continue
            rows.append(
                BenchRow(
                    path,
                    name,
                    alias,
                    "timed",
                    size=m.get("size"),
                    median_s=m.get("median_s"),
                    min_s=m.get("min_s"),
                    max_s=m.get("max_s"),
                    iqr_s=m.get("iqr_s"),
                    repeats=m.get("repeats"),
                    timer=str(m.get("timer") or ""),
                    metrics=dict(m.get("metrics") or {}),
                    targets=list(m.get("targets") or []),
                    windows=m.get("windows"),
                    windows_stop=str(m.get("windows_stop") or ""),
                )
            )
    return rows


def run_bench(
    paths: Sequence[Path],
    *,
    trust: bool | None = None,
    runtime_overrides: dict[str, Any] | None = None,
    workspace: Path | None = None,
    warmup: bool = False,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    executor: ExecutorChoice | None = None,
) -> BenchOutcome:
    """Validate and benchmark every contracted kernel under ``paths``; ``on_progress`` receives
    ``{"kind": "file", "path": ...}`` per file and the worker's step messages (kernel, device)."""
    from warp_harness.daemon.ci import _common_root
    from warp_harness.daemon.engines import Engines, check_many

    root = (workspace or _common_root(paths)).resolve()
    settings = load_settings(root)
    trusted = settings.trust if trust is None else trust
    if not trusted:
        raise NotTrusted(
            "workspace not trusted: the benchmark runs its kernels; pass --trust or set trust = true"
        )
    overrides = dict(runtime_overrides or {})
    profile = overrides.get("profile")
    if isinstance(profile, str) and profile.endswith(".toml"):
        overrides["profile"] = str(Path(profile).resolve())  # the worker runs in the workspace
    options = load_runtime_options(root, overrides).merged({"validate": True, "bench": True})
    targets = list(discovery.walk(paths))
    engines = Engines(root, settings, options, executor or ExecutorChoice(), None, warmup, on_progress)

    def make() -> Any:  # capb (#31 item 4): every captured launch replayed and timed, as in ci
        engine = engines.make()
        engine.replay_captures = "all"
        return engine

    def starting(target: Path) -> None:
        if on_progress is not None:
            on_progress({"kind": "file", "path": _shown(root, target)})

    rows: list[BenchRow] = []
    files: list[str] = []
    problems: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    notes: list[str] = []
    try:
        reports = check_many(make, targets, engines.parallel, on_start=starting)
    finally:
        engines.close()
    for report in reports:
        files.append(report.path)
        rows.extend(rows_of(report))
        problems.extend(
            r.to_dict()
            for r in report.records
            if r.tier == "dynamic" and r.record.severity is Severity.ERROR and r.record.rule not in _PERF
        )
        warnings.extend(
            r.to_dict()
            for r in report.records
            if r.tier == "dynamic"
            and r.record.severity is Severity.WARNING
            and r.record.stage is Stage.PERFORMANCE
        )
        for r in report.dynamic():
            if r.rule == F.DEVICE_SKIPPED and r.message not in notes:
                notes.append(r.message)
    return BenchOutcome(rows, files, problems, options, notes, warnings)


def _shown(root: Path, target: Path) -> str:
    try:
        return target.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(target)


_PERF = {F.TARGET_MISSED}


def _fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1.0:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} µs"


def table(outcome: BenchOutcome) -> str:
    header = [
        "kernel",
        "device",
        "size",
        "median",
        "spread (IQR; min..max)",
        "GB/s",
        "% peak",
        "GFLOP/s",
        "targets",
    ]
    body: list[list[str]] = []
    for r in outcome.rows:
        where = f"{r.path}::{r.kernel}"
        if r.status != "timed":
            body.append([where, r.device, "-", "-", r.status, "-", "-", "-", "-"])
            continue
        med = r.median_s or 0.0
        spread = (
            f"±{(r.iqr_s or 0.0) / med * 50:.1f}%; {_fmt_time(r.min_s)}..{_fmt_time(r.max_s)} n={r.repeats}"
            if med
            else "-"
        )
        bw = r.metrics.get("bandwidth_gbs")
        util = r.metrics.get("bandwidth_util", r.metrics.get("flops_util"))
        gf = r.metrics.get("gflops")
        verdicts = ", ".join(f"{t['target']}: {t['verdict']}" for t in r.targets) or "-"
        body.append(
            [
                where,
                r.device,
                str(r.size),
                _fmt_time(r.median_s),
                spread,
                f"{bw:.1f}" if bw is not None else "-",
                f"{util * 100:.1f}" if util is not None else "-",
                f"{gf:.1f}" if gf is not None else "-",
                verdicts,
            ]
        )
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *body]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for note in outcome.notes:
        lines.append(f"note: {note}")
    for kind, found in (("warning", outcome.warnings), ("error", outcome.problems)):
        for p in found:
            loc = p.get("location") or {}
            lines.append(f"{kind} {p.get('rule')} {loc.get('path')}:{loc.get('line')}: {p.get('message')}")
    return "\n".join(lines) + "\n"
