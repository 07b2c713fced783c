"""Headless CI: both tiers once over the given paths, a summary, an exit code, reports.

Exit codes: 0 no errors, 1 errors found, 2 usage/configuration problem.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from warp_harness.config import Settings, load_settings
from warp_harness.daemon import discovery, shards
from warp_harness.daemon import findings as F
from warp_harness.daemon.executor import ExecutorChoice
from warp_harness.daemon.options import RuntimeOptions, load_runtime_options
from warp_harness.daemon.results import CheckReport
from warp_harness.daemon.shards import Shard
from warp_harness.record import Record, Related, Severity


@dataclass
class CiOutcome:
    results: list[Any]  # FileResult
    trusted: bool
    dynamic_files: list[str] = field(default_factory=list)
    errors: int = 0
    warnings: int = 0
    repros: list[str] = field(default_factory=list)
    static_only: bool = False
    # one entry per file (path as shown, status, and from the dynamic tier: seed, repros, kernel
    # verdicts, timings); the `files` list of the ci JSON report, beside its records
    files: list[dict[str, Any]] = field(default_factory=list)
    # ci --shard K/N: the `shard` object of the JSON report (daemon/shards.py); None for a full run
    shard: dict[str, Any] | None = None


class GitError(RuntimeError):
    pass


# What a repository's own .git/config can make `git diff` / `git ls-files` run when the workspace
# is not trusted. The fsmonitor hook runs on every index read: switched off from the command line
# (which wins over every config file). Clean filters (`filter.*.clean`/`process`, chosen by the
# workspace's .gitattributes) run when git compares a file's content with the index: switched off
# by name (_neutral_filters), and plumbing `git diff-index` compares stat-dirty files by their stat
# alone and never rewrites the index (so no post-index-change hook), where porcelain `git diff`
# reads every stat-dirty file. Belt and braces: hooks, the pager, external diffs and textconv drivers
# off; no fetching (a partial clone fetches missing objects through remote.*.uploadpack or
# core.sshCommand); a diff order file that cannot be a FIFO or /dev/zero.
_NEUTRAL_CONFIG = ("core.fsmonitor=", "core.hooksPath=/dev/null", "core.pager=cat", "diff.external=")
_NEUTRAL_ENV = {
    "GIT_ALLOW_PROTOCOL": "none",  # set: every transport not listed (all of them) is refused
    "GIT_NO_LAZY_FETCH": "1",  # git 2.39.4+; GIT_ALLOW_PROTOCOL covers older ones
    "GIT_OPTIONAL_LOCKS": "0",  # no opportunistic index rewrite of someone else's repository
    "GIT_TERMINAL_PROMPT": "0",
}
# no rename detection either: it reads blobs, which a partial clone would fetch; -z: raw names
_DIFF_OPTIONS = ("--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", "-O/dev/null")


def _run_git(
    root: Path, args: Sequence[str], neutral: Sequence[str], env: dict[str, str] | None
) -> list[str]:
    """The NUL- or newline-separated names git prints (file names as the file system spells them)."""
    command = ["git", "--no-pager", *(part for item in neutral for part in ("-c", item)), *args]
    try:
        out = subprocess.run(
            command, cwd=root, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True, timeout=60
        ).stdout
    except subprocess.CalledProcessError as exc:
        lines = exc.stderr.decode("utf-8", "replace").strip().splitlines() or [str(exc)]
        reason = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1])
        raise GitError(f"git {' '.join(args)} failed: {reason}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {' '.join(args)} failed: {exc}") from None
    separator = b"\0" if "-z" in args else b"\n"
    return [os.fsdecode(name) for name in out.split(separator) if name.strip()]


def _neutral_filters(root: Path, neutral: Sequence[str], env: dict[str, str] | None) -> list[str]:
    """``filter.<name>.clean=`` (and smudge, process; not required) for every filter the config
    defines: even plumbing reads a "racily clean" file (changed within the second the index was
    written) through its clean filter to compare it."""
    try:
        entries = _run_git(root, ["config", "-z", "--get-regexp", r"^filter\."], neutral, env)
    except GitError:
        entries = []  # `git config --get-regexp` exits 1 when nothing matches
    names = {key[len("filter.") : key.rindex(".")] for key, _, _ in (e.partition("\n") for e in entries)}
    for name in names:
        if "=" in name or "\n" in name:  # `-c` cannot name it
            raise GitError(f"the repository's git config names a filter {name!r} that cannot be switched off")
    off = ("clean=", "smudge=", "process=", "required=false")
    return [f"filter.{n}.{setting}" for n in sorted(names) for setting in off]


def changed_files(root: Path, base: str | None = None, *, trusted: bool = False) -> list[Path]:
    """Python files and notebooks changed in git: against ``base`` (``base...HEAD``) or uncommitted
    + untracked.

    Unless ``trusted``, nothing the repository's own config names is run (see _NEUTRAL_CONFIG).
    """
    neutral: list[str] = [] if trusted else list(_NEUTRAL_CONFIG)
    env = None if trusted else {**os.environ, **_NEUTRAL_ENV}
    if not trusted:
        neutral += _neutral_filters(root, neutral, env)

    def git(*args: str) -> list[str]:
        return _run_git(root, args, neutral, env)

    top = Path(git("rev-parse", "--show-toplevel")[0])
    names: list[str] = []
    if base:
        if base.startswith("-"):
            raise GitError(f"--base {base!r}: not a git revision")
        names += git("diff", *_DIFF_OPTIONS, "--diff-filter=ACMR", f"{base}...HEAD", "--")
    # untrusted: plumbing, which takes a stat-dirty file for changed instead of reading it, and
    # never rewrites the index (porcelain `git diff` does, GIT_OPTIONAL_LOCKS notwithstanding); a
    # touched but unchanged file is checked once more, nothing is missed
    names += git("diff" if trusted else "diff-index", *_DIFF_OPTIONS, "--diff-filter=ACMR", "HEAD", "--")
    names += git("ls-files", "-z", "--others", "--exclude-standard")
    out: list[Path] = []
    for n in dict.fromkeys(names):
        p = (top / n).resolve()
        if p.suffix in (".py", ".ipynb") and p.is_file() and p.is_relative_to(root.resolve()):
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
    for r in F.DYNAMIC_RULES:
        infos.setdefault(
            r.id,
            RuleInfo(id=r.id, name=r.name, summary=r.summary, severity=r.severity, doc=r.doc(), url=r.url),
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
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    executor: ExecutorChoice | None = None,
    shard: Shard | None = None,
    cache_static: bool = True,
) -> CiOutcome:
    import sys

    from warp_harness.check_cache import check_alone, open_cache
    from warp_harness.engine import KeepLines, iter_python_files
    from warp_harness.output.model import FileResult

    root = (workspace or _common_root(paths)).resolve()
    settings = load_settings(root, overrides)
    trusted = settings.trust if trust is None else trust
    options: RuntimeOptions = load_runtime_options(root, runtime_overrides)

    static: dict[Path, FileResult] = {}
    shown: dict[Path, str] = {}  # resolved path -> as given (a symlink by its own name, not its target)
    files = list(iter_python_files(list(paths), overrides))
    # untrusted and unsharded, the dynamic tier's targets are never used: not read (newton: 973 files)
    walked = not static_only and (trusted or shard is not None)
    dynamic_targets: list[Path] = list(discovery.walk(paths)) if walked else []
    plan = None
    if shard is not None:  # only this shard's part of both tiers (daemon/shards.py)
        plan = shards.plan(shard, root, files, dynamic_targets, dynamic_tier=trusted)
        files, dynamic_targets = plan.mine(files), plan.mine(dynamic_targets)
    # the static tier through `check`'s result cache (each file alone: the same records as before)
    cache = None
    if files and cache_static:
        from warp_harness.check_cache import table_identity

        cache = open_cache(table_identity(), warn=lambda line: print(line, file=sys.stderr))
    settings_of = _FolderSettings(overrides)
    cwds = _cwds()
    # the source lines the report shows: those of the records, unless dynamic records join them
    lines: KeepLines = True if trusted and not static_only else "records"
    resolve = _Resolver()
    for p in files:
        resolved = resolve(p)
        shown[resolved] = _display(p, cwds)
        static[resolved] = check_alone(p, overrides, shown[resolved], cache, settings_of(p), lines)
    outcome = CiOutcome(results=[], trusted=trusted, static_only=static_only)
    merged: dict[Path, list[Record]] = {p: list(r.records) for p, r in static.items()}
    dynamic_payloads: dict[Path, CheckReport] = {}
    sources: dict[Path, tuple[str, ...] | None] = {p: r.source_lines for p, r in static.items()}
    if dynamic_targets and trusted:  # an untrusted workspace never reaches an executor
        from warp_harness.daemon.engines import Engines, check_many

        # a remote executor is shared by the engines of check_many's threads; a local one is
        # made per engine (its worker runs one job at a time)
        engines = Engines(
            root, settings, options, executor or ExecutorChoice(), overrides, warmup, on_progress
        )

        def starting(target: Path) -> None:
            if on_progress is not None:
                on_progress({"kind": "file", "path": shown.get(target.resolve()) or _display(target)})

        try:

            def make() -> Any:  # capture: ci replays every captured launch (daemon/captured/)
                engine = engines.make()
                engine.replay_captures = "all"
                return engine

            reports = check_many(make, dynamic_targets, engines.parallel, on_start=starting)
        finally:
            engines.close()
        for target, report in zip(dynamic_targets, reports, strict=True):
            dynamic_payloads[target.resolve()] = report
            dyn = report.dynamic()
            key = target.resolve()
            dyn = _shown_at(dyn, report.path, shown.setdefault(key, _display(target)))
            merged[key] = _confirm(merged.get(key, []), dyn)
            outcome.dynamic_files.append(report.path)
            outcome.repros.extend(report.repros)
    # untrusted: the summary line says the dynamic tier was skipped; one note per file would only
    # bury the real findings (and flood code scanning with SARIF notes)
    for p in sorted(merged, key=lambda q: shown.get(q) or _display(q)):
        records = tuple(sorted(merged[p], key=Record.report_key))  # a notebook's in cell order
        outcome.results.append(FileResult(shown.get(p) or _display(p), records, sources.get(p)))
        outcome.errors += sum(1 for r in records if r.severity is Severity.ERROR)
        outcome.warnings += sum(1 for r in records if r.severity is Severity.WARNING)
        entry = _file_entry(shown.get(p) or _display(p), records, dynamic_payloads.get(p), outcome)
        # a shard's report also quotes the source lines its records point at, for merge-reports
        outcome.files.append({**entry, **(shards.source_lines(outcome.results[-1]) if plan else {})})
    if plan is not None:
        given = [_display(p) for p in paths]
        run = shards.run_options(
            given, overrides, runtime_overrides, static_only=static_only, trusted=trusted
        )
        outcome.shard = shards.shard_field(plan, shown, outcome.dynamic_files, run)
    return outcome


class _Resolver:
    """``path.resolve()``, the folder's part resolved once per folder: a file that is not a symlink
    costs one lstat, not one per component of its path (newton: 0.5 s of a warm `ci`)."""

    def __init__(self) -> None:
        self.folders: dict[Path, Path] = {}

    def __call__(self, path: Path) -> Path:
        if path.is_symlink() or path.name in ("", ".", ".."):
            return path.resolve()
        folder = self.folders.get(path.parent)
        if folder is None:
            folder = self.folders[path.parent] = path.parent.resolve()
        return folder / path.name


class _FolderSettings:
    """``load_settings(path, overrides)`` once per folder (as `check` does: `batch._Job.settings_for`);
    a symlink's, and those of a folder whose per-file-ignores name files, each time."""

    def __init__(self, overrides: dict[str, Any] | None) -> None:
        self.overrides = overrides
        self.folders: dict[Path, Settings] = {}

    def __call__(self, path: Path) -> Settings:
        if path.is_symlink():
            return load_settings(path, self.overrides)
        settings = self.folders.get(path.parent)
        if settings is None:
            settings = load_settings(path, self.overrides)
            if not settings.per_file_ignores:
                self.folders[path.parent] = settings
        return settings


def _file_entry(
    shown: str, records: Sequence[Record], report: CheckReport | None, outcome: CiOutcome
) -> dict[str, Any]:
    """What the ci JSON says of one file: its dynamic-tier status (``ok`` only when its kernels passed,
    else ``crash``, ``timeout``, ``error``, ``fail``, ``import-error``, ``stale``: `results.file_status`;
    ``static-only``, ``untrusted``, or ``no-kernels`` when the tier had nothing to run in it), the seed
    of its generated inputs, the failing cases stored, each kernel's verdicts and the stage timings (ms)."""
    entry: dict[str, Any] = {
        "path": shown,
        "errors": sum(1 for r in records if r.severity is Severity.ERROR),
        "warnings": sum(1 for r in records if r.severity is Severity.WARNING),
    }
    if report is None:
        status = (
            "static-only" if outcome.static_only else "untrusted" if not outcome.trusted else "no-kernels"
        )
        return {**entry, "status": status}
    return {
        **entry,
        "status": report.status,
        "seed": report.seed,
        "devices": report.devices,
        "repros": report.repros,
        "kernels": report.kernels,
        "timings": {k: round(v, 2) for k, v in report.timings.items() if v is not None},
        "elapsed_ms": round(report.elapsed_ms or 0.0, 2),
    }


def _common_root(paths: Sequence[Path]) -> Path:
    resolved = [p.resolve() for p in paths] or [Path.cwd().resolve()]
    dirs = [p if p.is_dir() else p.parent for p in resolved]
    common = dirs[0]
    for d in dirs[1:]:
        while not d.is_relative_to(common):
            common = common.parent
    settings = load_settings(common)
    return settings.root or common


def _cwds() -> tuple[Path, Path]:
    """The working folder as given and resolved (`_display`)."""
    return Path(os.path.abspath(Path.cwd())), Path.cwd().resolve()


def _display(path: Path, cwds: tuple[Path, Path] | None = None) -> str:
    """The path as `check` shows it: relative to the working folder, else absolute. Symlinks are
    not resolved: a link is shown by its own name, never by where it points."""
    absolute = Path(os.path.abspath(path))
    for cwd in cwds or _cwds():
        if absolute.is_relative_to(cwd):
            return absolute.relative_to(cwd).as_posix()
    return absolute.as_posix()


def _shown_at(records: list[Record], engine_path: str, shown: str) -> list[Record]:
    """Dynamic records carry the daemon's workspace-relative path; show them like the static ones."""
    return [
        replace(r, location=replace(r.location, path=shown)) if r.location.path == engine_path else r
        for r in records
    ]


_CONFIRMING = (F.CODEGEN_ERROR, F.COMPILE_ERROR)


def _confirm(static: list[Record], dynamic: list[Record]) -> list[Record]:
    """One finding per illegal kernel: a Warp codegen error on a kernel the static tier already
    reported an error in becomes a note on that static record (the one on the same line, else the
    kernel's first), confirmed by both tiers, instead of a second record with the same cause."""
    out = list(static)
    for dyn in dynamic:
        kernel = dyn.location.kernel
        candidates = [
            i
            for i, r in enumerate(out)
            if kernel
            and dyn.rule in _CONFIRMING
            and r.rule.startswith("WH")
            and not r.rule.startswith("WHD")
            and r.severity is Severity.ERROR
            and r.location.kernel == kernel
        ]
        if not candidates:
            out.append(dyn)
            continue
        same_line = [i for i in candidates if out[i].location.line == dyn.location.line]
        i = (same_line or sorted(candidates, key=lambda j: out[j].sort_key()))[0]
        note = Related(dyn.location, f"confirmed by Warp codegen ({dyn.rule}): {dyn.message}")
        out[i] = replace(out[i], related=(*out[i].related, note))
    return out


def summary(outcome: CiOutcome) -> str:
    files = len(outcome.results)
    tier = (
        "dynamic tier skipped (--static-only)"
        if outcome.static_only
        else f"dynamic tier on {len(outcome.dynamic_files)} module(s)"
        if outcome.trusted
        else "dynamic tier skipped: workspace not trusted (pass --trust or set trust = true)"
    )
    part = f" (shard {outcome.shard['index']}/{outcome.shard['count']})" if outcome.shard else ""
    return (
        f"warp-harness ci{part}: {files} file(s), {outcome.errors} error(s), "
        f"{outcome.warnings} warning(s); {tier}"
        + (
            f"; {len(outcome.repros)} failing case(s) stored in .warp-harness/repros"
            if outcome.repros
            else ""
        )
    )
