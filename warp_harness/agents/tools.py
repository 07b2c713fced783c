"""What the MCP tools do, without MCP: plain arguments in, JSON-able dicts out.

Every finding is a record in the record schema (``Record.to_dict``: stage, rule, severity, location,
message, expected, actual, hint, fix, related, url). Paths are taken relative to the workspace root
the server was started on, and a path that leads out of it is refused.

The static tools (`check`, `fix`, `explain_rule`) never execute workspace code. The dynamic ones
(`validate`, `bench`, `replay`, `tune`) run it only when the server was started with an explicit
``--trust`` (never from the workspace's own files), through the daemon's engine: in the sandboxed
worker subprocess with its time and memory limits. A running daemon of the workspace answers
`results`, and `validate` when it serves the workspace trusted.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.record import Record, Severity

Progress = Callable[[dict[str, Any]], None]


class ToolRefused(ValueError):
    """A request the tools will not carry out (a path out of the workspace, an unknown rule ...)."""


@dataclass
class Workspace:
    """The folder the server serves and whether its code may run."""

    root: Path
    trusted: bool = False
    overrides: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = self.root.resolve()

    def path(self, name: str) -> Path:
        """``name`` (relative to the root, or absolute inside it) as a path inside the workspace."""
        path = (self.root / name).resolve()
        if path != self.root and self.root not in path.parents:
            raise ToolRefused(f"{name}: outside the workspace {self.root}")
        return path

    def shown(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def _counts(records: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "errors": sum(1 for r in records if r["severity"] == Severity.ERROR.value),
        "warnings": sum(1 for r in records if r["severity"] == Severity.WARNING.value),
    }


def _linked(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` with each one's documentation ``url`` filled in (as `check`'s JSON has it)."""
    from warp_harness.rule_ids import rule_url

    for record in records:
        if not record.get("url"):
            record["url"] = rule_url(str(record.get("rule", "")))
    return records


def _untrusted(ws: Workspace, what: str) -> dict[str, Any]:
    from warp_harness.daemon.engine import untrusted_record

    record = untrusted_record(".").to_dict()
    record["message"] = (
        f"{what} runs this workspace's code, and the MCP server was not started with --trust: "
        "nothing was run. Restart it with `warp-harness mcp --trust` for a workspace you trust."
    )
    # the engine's hint names pyproject's `trust = true`, which never grants the MCP server trust
    record["hint"] = (
        "restart the MCP server with `warp-harness mcp --trust`: its trust comes from its command line "
        "only, never from the workspace's pyproject.toml"
    )
    return {
        "status": "untrusted",
        "records": _linked([record]),
        "kernels": {},
        "repros": [],
        "errors": 0,
        "warnings": 0,
    }


# --------------------------------------------------------------------------- static tools


def check(
    ws: Workspace, path: str | None = None, source: str | None = None, name: str = "snippet.py"
) -> dict[str, Any]:
    """Static records of a file or folder (``path``) or of a source text (``source``, shown as ``name``)."""
    from warp_harness.config import load_settings
    from warp_harness.engine import _builtins, check_bytes, check_paths

    if (path is None) == (source is None):
        raise ToolRefused("give exactly one of `path` or `source`")
    if source is not None:
        settings = load_settings(ws.path(name), ws.overrides)
        results = [check_bytes(source.encode("utf-8"), name, settings, _builtins())]
    else:
        target = ws.path(str(path))
        if not target.exists():
            raise ToolRefused(f"{path}: no such file or folder")
        results = check_paths([target], ws.overrides)
    files: list[dict[str, Any]] = []
    everything: list[dict[str, Any]] = []
    for result in results:
        records = [r.to_dict() for r in result.records]
        shown = ws.shown(Path(result.path)) if source is None else name
        for r in records:
            r["path"] = r["location"]["path"] = shown
        files.append({"path": shown, "records": _linked(records)})
        everything += records
    return {"files": files, **_counts(everything)}


def fix(
    ws: Workspace,
    path: str | None = None,
    source: str | None = None,
    name: str = "snippet.py",
    unsafe: bool = False,
    write: bool = False,
) -> dict[str, Any]:
    """Apply the fixes of the static records (safe ones; ``unsafe`` too when asked): the fixed text,
    its unified diff, how many fixes were applied, and the records the fixed text still has.
    ``write`` (a file ``path`` only) writes the fixed text back."""
    from warp_harness.config import load_settings
    from warp_harness.engine import _builtins, check_bytes
    from warp_harness.fixes import fix_until_stable
    from warp_harness.safe_read import read_regular_text

    if (path is None) == (source is None):
        raise ToolRefused("give exactly one of `path` or `source`")
    if source is None:
        file = ws.path(str(path))
        if not file.is_file():
            raise ToolRefused(f"{path}: not a file")
        text = read_regular_text(file)
        shown = ws.shown(file)
    else:
        file, text, shown = ws.path(name), source, name
    if write and source is not None:
        raise ToolRefused("`write` needs a `path`")
    settings = load_settings(file, ws.overrides)
    table = _builtins()

    def recheck(new_text: str) -> Sequence[Record]:
        return check_bytes(new_text.encode("utf-8"), shown, settings, table).records

    original = text
    text, remaining, applied_total, fixed = fix_until_stable(text, recheck(text), recheck, not unsafe)
    applied_rules = [r.rule for r in fixed]
    if write and text != original:
        file.write_text(text, encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(keepends=True), text.splitlines(keepends=True), f"a/{shown}", f"b/{shown}"
        )
    )
    records = [r.to_dict() for r in remaining]
    return {
        "path": shown,
        "applied": applied_total,
        "fixed_rules": applied_rules,
        "diff": diff,
        "text": text,
        "written": bool(write and text != original),
        "records": _linked(records),
        **_counts(records),
    }


def explain_rule(rule_id: str) -> dict[str, Any]:
    """A rule's documentation (WH static rules and WHD dynamic ones)."""
    from warp_harness.daemon.findings import dynamic_rule
    from warp_harness.rules import rule_by_id

    cls = rule_by_id(rule_id.upper())
    if cls is not None:
        return {
            "id": cls.id,
            "name": cls.name,
            "summary": cls.summary,
            "severity": cls.severity.value,
            "tier": "static",
            "stage": cls.stage.value,
            "fixable": cls.fixable,
            "url": cls.url(),
            "doc": cls.doc(),
        }
    rule = dynamic_rule(rule_id.upper())
    if rule is None:
        raise ToolRefused(f"unknown rule {rule_id!r}; the `warp-harness://rules` resource lists them")
    return {
        "id": rule.id,
        "name": rule.name,
        "summary": rule.summary,
        "severity": rule.severity.value,
        "tier": "dynamic",
        "stage": rule.stage.value,
        "fixable": False,
        "url": rule.url,
        "doc": rule.doc(),
    }


# --------------------------------------------------------------------------- dynamic tools


@dataclass
class Run:
    """One dynamic job's engine, kept so a cancelled tool call can kill the worker mid-job."""

    engine: Any = None

    def abort(self) -> None:
        if self.engine is not None:
            self.engine.abort()


def _engine(ws: Workspace, overrides: dict[str, Any], on_progress: Progress | None) -> Any:
    from warp_harness.config import load_settings
    from warp_harness.daemon.engine import Engine
    from warp_harness.daemon.options import load_runtime_options

    settings = load_settings(ws.root, ws.overrides)
    options = load_runtime_options(ws.root, overrides)
    return Engine(
        ws.root, settings, options, True, ws.overrides or None, warmup=False, on_progress=on_progress
    )


def _report_dict(report: dict[str, Any], kernel: str | None) -> dict[str, Any]:
    """A check result (``CheckReport.to_dict()``, or the daemon's reply of the same shape) as a
    tool answer: dynamic records (of one kernel when named), verdicts, repros."""
    records = [
        r
        for r in report.get("records") or []
        if r.get("tier") == "dynamic" and (kernel is None or r["location"].get("kernel") in (None, kernel))
    ]
    kernels = report.get("kernels") or {}
    return {
        "path": report.get("path"),
        "status": report.get("status"),
        "seed": report.get("seed"),
        "kernels": kernels if kernel is None else {k: v for k, v in kernels.items() if k == kernel},
        "records": _linked(records),
        "repros": list(report.get("repros") or []),
        "timings": {k: v for k, v in (report.get("timings") or {}).items() if v is not None},
        **_counts(records),
    }


def _from_daemon(ws: Workspace, file: Path) -> dict[str, Any] | None:
    """The workspace daemon's fresh result for ``file`` when one serves it trusted, else None."""
    from warp_harness.daemon import protocol

    try:
        with protocol.Client(protocol.daemon_socket(ws.root), timeout=600) as conn:
            hello = conn.request("hello", client="warp-harness-mcp")
            if hello.get("type") != "welcome" or not hello.get("trusted"):
                return None
            reply = conn.request("check", path=str(file), force=True)
    except (OSError, protocol.ConnectionClosed):
        return None
    return dict(reply) if reply.get("type") == "result" else None


def validate(
    ws: Workspace,
    path: str,
    kernel: str | None = None,
    seed: int | None = None,
    run: Run | None = None,
    on_progress: Progress | None = None,
) -> dict[str, Any]:
    """Compile the file's kernels and validate them against their contracts' references."""
    from warp_harness.daemon.pipeline import Step

    if not ws.trusted:
        return _untrusted(ws, "validate")
    file = ws.path(path)
    if not file.is_file():
        raise ToolRefused(f"{path}: not a file")
    if seed is None:
        found = _from_daemon(ws, file)
        if found is not None:
            return {**_report_dict(found, kernel), "via": "daemon"}
    engine = _engine(ws, {"seed": seed} if seed is not None else {}, on_progress)
    if run is not None:
        run.engine = engine
    try:
        report = engine.check(file, force=True, steps=(Step.VALIDATE,))
    finally:
        engine.close()
    return {**_report_dict(report.to_dict(), kernel), "via": "worker"}


def bench(
    ws: Workspace,
    path: str,
    kernel: str | None = None,
    repeats: int | None = None,
    run: Run | None = None,
    on_progress: Progress | None = None,
) -> dict[str, Any]:
    """Validate, then time the contracted kernels: one row per kernel and device (median, spread,
    bandwidth, % of the profile's peak, the contract's targets)."""
    from warp_harness.daemon.benchcmd import rows_of

    if not ws.trusted:
        return _untrusted(ws, "bench")
    file = ws.path(path)
    if not file.is_file():
        raise ToolRefused(f"{path}: not a file")
    overrides: dict[str, Any] = {"validate": True, "bench": True}
    if repeats is not None:
        overrides["bench_repeats"] = repeats
    engine = _engine(ws, overrides, on_progress)
    if run is not None:
        run.engine = engine
    try:
        report = engine.check(file, force=True)
    finally:
        engine.close()
    rows = [r.to_dict() for r in rows_of(report) if kernel is None or r.kernel == kernel]
    return {**_report_dict(report.to_dict(), kernel), "rows": rows}


def replay(ws: Workspace, run: Run | None = None, on_progress: Progress | None = None) -> dict[str, Any]:
    """Re-run every stored failing case of the workspace (``.warp-harness/repros``), a captured
    launch's replay included: the cases and records of `warp-harness replay --trust`."""
    from warp_harness.daemon import replay_stored, repros
    from warp_harness.daemon.options import load_runtime_options
    from warp_harness.daemon.supervisor import Supervisor

    if not ws.trusted:
        return _untrusted(ws, "replay")
    loaded = repros.load_cases(ws.root)
    cases = loaded.cases

    def starting(number: int, stored: repros.StoredCase) -> None:
        if on_progress is not None:
            on_progress({"label": f"replay {number}/{len(cases)} {stored.label}"})

    rows: list[dict[str, Any]] = []
    with Supervisor(ws.root, load_runtime_options(ws.root, {}), warmup=False) as sup:
        if run is not None:
            run.engine = sup
        # as `warp-harness replay --trust`: a captured launch's case is replayed from its capture
        results = replay_stored.replay(sup, cases, on_start=starting, on_progress=on_progress)
    for stored, (status, records) in zip(cases, results, strict=True):
        shown = [r.to_dict() for r in records if r.severity.value in ("error", "warning")]
        rows.append(
            {
                "case": stored.label,
                "file": stored.file.relative_to(ws.root).as_posix(),
                "status": status,
                "records": _linked(shown),
            }
        )
    return {
        "cases": rows,
        "failing": sum(1 for r in rows if r["status"] != "pass"),
        "refused": [{"file": str(f), "reason": why} for f, why in loaded.refused],
    }


def tune(
    ws: Workspace,
    path: str,
    kernel: str | None = None,
    target: str | None = None,
    repeats: int | None = None,
    on_progress: Progress | None = None,
) -> dict[str, Any]:
    """Try a contract's tunables: the Pareto front of time against shared memory, and the winning
    configuration as text edits of the module's constants."""
    from warp_harness.daemon.tune import pareto, run_tune
    from warp_harness.fixes import apply_edits
    from warp_harness.tunables import constant_edits

    if not ws.trusted:
        return _untrusted(ws, "tune")
    file = ws.path(path)
    if not file.is_file():
        raise ToolRefused(f"{path}: not a file")
    overrides = {"bench_repeats": repeats} if repeats is not None else None
    name, rows = run_tune(
        file, kernel=kernel, trust=True, runtime_overrides=overrides, target=target, on_progress=on_progress
    )
    front = pareto(rows)
    best = min((r for r in front if r.median_s is not None), key=lambda r: r.median_s or 0.0, default=None)
    source = file.read_text(encoding="utf-8")
    edits = constant_edits(source, best.config) if best is not None else []
    shown = ws.shown(file)
    new_source, _ = apply_edits(source, edits)
    diff = difflib.unified_diff(
        source.splitlines(keepends=True), new_source.splitlines(keepends=True), f"a/{shown}", f"b/{shown}"
    )
    return {
        "kernel": name,
        "candidates": [r.to_dict() for r in rows],
        "pareto": [r.to_dict() for r in front],
        "best": best.to_dict() if best is not None else None,
        "edits": [e.to_dict() for e in edits],
        "diff": "".join(diff),
    }


def results(ws: Workspace, path: str | None = None) -> dict[str, Any]:
    """The running daemon's latest result per file, each record with its streak (saves in a row
    it fired), and each kernel's verdicts."""
    from warp_harness.daemon import protocol

    fields: dict[str, Any] = {}
    if path is not None:
        fields["path"] = str(ws.path(path))
    try:
        with protocol.Client(protocol.daemon_socket(ws.root), timeout=30) as conn:
            reply = conn.request("results", **fields)
    except (OSError, protocol.ConnectionClosed) as exc:
        raise ToolRefused(
            f"no daemon serves {ws.root} ({exc}); start one with `warp-harness daemon {ws.root} --trust`"
        ) from None
    files = []
    for found in reply.get("results") or []:
        records = list(found.get("records") or [])
        files.append(
            {
                "path": found.get("path"),
                "status": found.get("status"),
                "kernels": found.get("kernels") or {},
                "records": _linked(records),
                "repeated": [
                    {"rule": r["rule"], "kernel": r["location"].get("kernel"), "streak": r.get("streak", 0)}
                    for r in records
                    if (r.get("streak") or 0) >= 2
                ],
            }
        )
    return {"files": files}
