"""Headless CI: both tiers once over the given paths, a summary, an exit code, reports.

Exit codes: 0 no errors, 1 errors found, 2 usage/configuration problem.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.config import load_settings
from warp_harness.daemon import discovery
from warp_harness.daemon import findings as F
from warp_harness.daemon.options import RuntimeOptions, load_runtime_options
from warp_harness.record import Record, Severity


@dataclass
class CiOutcome:
    results: list[Any]  # FileResult
    trusted: bool
    dynamic_files: list[str] = field(default_factory=list)
    errors: int = 0
    warnings: int = 0
    repros: list[str] = field(default_factory=list)
    static_only: bool = False


class GitError(RuntimeError):
    pass


def changed_files(root: Path, base: str | None = None) -> list[Path]:
    """Python files changed in git: against ``base`` (``base...HEAD``) or uncommitted + untracked."""

    def git(*args: str) -> list[str]:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60
            ).stdout
        except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            raise GitError(f"git {' '.join(args)} failed: {exc}") from None
        return [line for line in out.splitlines() if line.strip()]

    top = Path(git("rev-parse", "--show-toplevel")[0])
    names: list[str] = []
    if base:
        names += git("diff", "--name-only", "--diff-filter=ACMR", f"{base}...HEAD")
    names += git("diff", "--name-only", "--diff-filter=ACMR", "HEAD")
    names += git("ls-files", "--others", "--exclude-standard")
    out: list[Path] = []
    for n in dict.fromkeys(names):
        p = (top / n).resolve()
        if p.suffix == ".py" and p.is_file() and p.is_relative_to(root.resolve()):
            out.append(p)
    return out


def rule_infos() -> dict[str, Any]:
    """Static rule docs (when the rules package is there) plus the dynamic tier's rules."""
    from warp_harness.output.model import RuleInfo

    infos: dict[str, Any] = {}
    try:
        from warp_harness.rules.info import rule_infos as static_infos

        infos.update(static_infos())
    except ImportError:
        pass
    for rule, text in F.DESCRIPTIONS.items():
        infos.setdefault(
            rule,
            RuleInfo(id=rule, name=rule.lower(), summary=text, severity=Severity.ERROR, doc=text, url=""),
        )
    return infos


def run_ci(
    paths: Sequence[Path],
    *,
    trust: bool | None = None,
    overrides: dict[str, Any] | None = None,
    runtime_overrides: dict[str, Any] | None = None,
    static_only: bool = False,
    workspace: Path | None = None,
    warmup: bool = False,
) -> CiOutcome:
    from warp_harness.engine import check_file, iter_python_files
    from warp_harness.output.model import FileResult

    root = (workspace or _common_root(paths)).resolve()
    settings = load_settings(root, overrides)
    trusted = settings.trust if trust is None else trust
    options: RuntimeOptions = load_runtime_options(root, runtime_overrides)

    static: dict[Path, FileResult] = {}
    for p in iter_python_files(list(paths), overrides):
        shown = _display(p, root)
        static[p.resolve()] = check_file(p, overrides, display_path=shown)
    dynamic_targets: list[Path] = [] if static_only else list(discovery.walk(paths))
    outcome = CiOutcome(results=[], trusted=trusted, static_only=static_only)
    merged: dict[Path, list[Record]] = {p: list(r.records) for p, r in static.items()}
    sources: dict[Path, tuple[str, ...] | None] = {p: r.source_lines for p, r in static.items()}
    if dynamic_targets and trusted:
        from warp_harness.daemon.server import Engine

        engine = Engine(root, settings, options, True, overrides, warmup=warmup, record_history=False)
        try:
            for target in dynamic_targets:
                payload = engine.check(target, force=True)
                dyn = [Record.from_dict(r) for r in payload["records"] if r.get("tier") == "dynamic"]
                merged.setdefault(target, []).extend(dyn)
                outcome.dynamic_files.append(engine.display(target))
                outcome.repros.extend(payload.get("repros") or [])
        finally:
            engine.close()
    # untrusted: the summary line says the dynamic tier was skipped; one note per file would only
    # bury the real findings (and flood code scanning with SARIF notes)
    for p in sorted(merged, key=lambda q: _display(q, root)):
        records = tuple(sorted(merged[p], key=lambda r: r.sort_key()))
        outcome.results.append(FileResult(_display(p, root), records, sources.get(p)))
        outcome.errors += sum(1 for r in records if r.severity is Severity.ERROR)
        outcome.warnings += sum(1 for r in records if r.severity is Severity.WARNING)
    return outcome


def _common_root(paths: Sequence[Path]) -> Path:
    resolved = [p.resolve() for p in paths] or [Path.cwd().resolve()]
    dirs = [p if p.is_dir() else p.parent for p in resolved]
    common = dirs[0]
    for d in dirs[1:]:
        while not d.is_relative_to(common):
            common = common.parent
    settings = load_settings(common)
    return settings.root or common


def _display(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def summary(outcome: CiOutcome) -> str:
    files = len(outcome.results)
    tier = (
        "dynamic tier skipped (--static-only)"
        if outcome.static_only
        else f"dynamic tier on {len(outcome.dynamic_files)} module(s)"
        if outcome.trusted
        else "dynamic tier skipped: workspace not trusted (pass --trust or set trust = true)"
    )
    return (
        f"warp-harness ci: {files} file(s), {outcome.errors} error(s), {outcome.warnings} warning(s); {tier}"
        + (
            f"; {len(outcome.repros)} failing case(s) stored in .warp-harness/repros"
            if outcome.repros
            else ""
        )
    )
