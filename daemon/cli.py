"""Subcommands of the dynamic tier: ``daemon``, ``ci``, ``replay``, ``bench``, ``calibrate``.

``warp_harness.cli`` (the lead's parser) calls :func:`add_subcommands`; ``python -m
warp_harness.daemon`` builds a parser of its own with the same subcommands.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO


def _runtime_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if getattr(args, "device", None):
        out["devices"] = [d for group in args.device for d in group.split(",") if d]
    if getattr(args, "mode", None):
        out["mode"] = args.mode
    if getattr(args, "no_bench", False):
        out["bench"] = False
    if getattr(args, "seed", None) is not None:
        out["seed"] = args.seed
    if getattr(args, "replay_tolerances", None):  # captured launches' behaviour diff (#31)
        out["replay_tolerances"] = list(args.replay_tolerances)
    if getattr(args, "timeout", None) is not None:
        out["timeout_s"] = args.timeout
    if getattr(args, "launch_timeout", None) is not None:
        out["launch_timeout_s"] = args.launch_timeout
    for defence in (
        "verdict_worker",
        "isolate_modules",
        "require_hermetic",
    ):  # hermetic (#37): command line only
        if getattr(args, defence, None) is not None:
            out[defence] = getattr(args, defence)
    return out


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trust",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="allow executing this workspace's code (in a sandboxed worker); --no-trust: refuse, "
        "whatever the workspace's pyproject.toml says (default: its `trust`)",
    )
    p.add_argument("--device", action="append", metavar="DEV", help="cpu, cuda or cuda:N (repeatable)")
    p.add_argument("--mode", choices=("release", "debug"), help="Warp build mode")
    p.add_argument("--seed", type=int, help="fixed seed for generated inputs (default: fresh, recorded)")
    p.add_argument("--timeout", type=float, metavar="S", help="time limit of one job")
    p.add_argument("--launch-timeout", type=float, metavar="S", help="time limit of one kernel launch")
    p.add_argument(  # captured launches (#31; docs/capture.md)
        "--replay-tolerances",
        action="append",
        metavar="[KERNEL.]DTYPE=RTOL,ATOL",
        help="the behaviour diff's tolerance of a float dtype (of one kernel); repeatable",
    )
    p.add_argument(  # hermetic (#37)
        "--verdict-worker",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="judge every pass against references computed in a second worker (default: on; a "
        "workspace's pyproject.toml cannot turn it off)",
    )
    p.add_argument(  # hermetic (#37)
        "--isolate-modules",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a fresh worker for each module, so nothing one module changed reaches another's job "
        "(default: on; a workspace's pyproject.toml cannot turn it off)",
    )
    p.add_argument(  # hermetic (#37 item 1)
        "--require-hermetic",
        action="store_true",
        default=None,
        help="a verdict that is not hermetic (WHD069: the kernel was validated by importing its "
        "module) is an error (command line only)",
    )


def _executor_flags(p: argparse.ArgumentParser) -> None:
    """ci, bench, replay, tune: where their jobs run (daemon/executor.py; docs/scaling.md)."""
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        help="where jobs run: local worker (default) or a Ray cluster "
        "(the ray extra: pip install '.[ray]' in a clone; README: Install)",
    )
    p.add_argument("--address", metavar="ADDR", help="the Ray cluster (host:port; default RAY_ADDRESS)")


def _executor(args: argparse.Namespace, start: Path) -> Any:
    """The executor the flags or the workspace's [tool.warp-harness.runtime] name (ConfigError)."""
    from warp_harness.daemon.executor import executor_choice

    folder = start if start.is_dir() else start.parent
    return executor_choice(
        folder,
        kind=getattr(args, "executor", None),
        address=getattr(args, "address", None),
        trusted_by_flag=getattr(args, "trust", None) is True,
    )


class _ProgressLine:
    """One status line on a terminal: the time since the command started, the file, the step
    (import, compile, validate, bench) with its kernel and device. Drawn by tqdm (a bar with no
    total: only the elapsed time and the description; ``leave=False`` erases it at the end),
    chosen over rich for its size and import time (a few ms; rich's layout engine is not needed for
    one line). A ticker refreshes it twice a second, so a long compile still shows time passing."""

    def __init__(self, stream: TextIO) -> None:
        from tqdm import tqdm

        self.path = ""
        self.what = ""
        try:
            width = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            width = 0
        # a terminal that reports no width (a bare pseudo-terminal) would get an empty line
        self._bar = tqdm(
            file=stream,
            bar_format="[{elapsed}] {desc}",
            leave=False,
            dynamic_ncols=width > 0,
            ncols=None if width > 0 else 100,
            nrows=None if width > 0 else 24,
            mininterval=0.1,
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="warp-harness-progress", daemon=True)
        self._ticker.start()

    def __call__(self, msg: dict[str, Any]) -> None:
        """A progress message: ``{"kind": "file", "path": ...}`` (a new file), the worker's
        ``{"stage": ..., "kernel": ..., "device": ...}``, or ``{"label": ...}`` (free text)."""
        if msg.get("kind") == "file":
            self.path, self.what = str(msg.get("path") or ""), "import"
        elif msg.get("label"):
            self.path, self.what = "", str(msg["label"])
        elif msg.get("stage"):
            where = " ".join(str(msg[k]) for k in ("kernel", "device") if msg.get(k))
            self.what = str(msg["stage"]).replace("-done", " done") + (f" {where}" if where else "")
        self._draw()

    def _draw(self) -> None:
        text = " ".join(part for part in (self.path, self.what) if part)
        with self._lock:
            if not self._stop.is_set():
                self._bar.set_description_str(text[:180], refresh=True)

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                if not self._stop.is_set():
                    self._bar.refresh()

    def clear(self) -> None:
        with self._lock:
            self._stop.set()
            self._bar.close()


@contextmanager
def progress_reporter(stream: TextIO) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """A progress callback that draws on ``stream`` when it is a terminal; None when it is not
    (piped or redirected: nothing extra is written). The line is erased when the work ends."""
    if not getattr(stream, "isatty", lambda: False)():
        yield None
        return
    line = _ProgressLine(stream)
    try:
        yield line
    finally:
        line.clear()


def _shard(text: str) -> Any:
    from warp_harness.daemon.shards import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--shard {text}: ")) from None


def _formats() -> tuple[str, ...]:
    from warp_harness.output import FORMATS

    return tuple(FORMATS)


def add_subcommands(subparsers: Any) -> None:
    d = subparsers.add_parser("daemon", help="watch a workspace; recompile, validate and benchmark on save")
    d.add_argument("path", nargs="?", default=".", metavar="PATH", help="the workspace to watch (default: .)")
    _common(d)
    d.add_argument("--socket", metavar="FILE", help="Unix socket path (default: private runtime folder)")
    d.add_argument("--no-watch", action="store_true", help="serve requests only, do not watch files")
    d.add_argument(
        "--debounce-ms", type=int, metavar="MS", help="quiet time after a save before checking (default 100)"
    )
    d.add_argument(
        "-v", "--verbose", action="store_true", help="log one line per job (file, verdicts, times) on stderr"
    )
    d.add_argument("--no-bench", action="store_true", help="skip the benchmark stage")
    d.add_argument(
        "--no-first-pass",
        dest="first_pass",
        action="store_false",
        help="do not check every kernel module once at start (then `results` lists only files saved since)",
    )
    d.set_defaults(func=cmd_daemon)

    c = subparsers.add_parser("ci", help="run both tiers once, headless; exit 1 on errors")
    c.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files and folders (default: .)")
    _common(c)
    _executor_flags(c)
    c.add_argument("--changed-files", action="store_true", help="only files changed in git")
    c.add_argument("--base", metavar="REF", help="with --changed-files: also files changed since REF")
    c.add_argument("--static-only", action="store_true", help="skip the dynamic tier")
    c.add_argument("--no-bench", action="store_true", help="skip the benchmark stage")
    c.add_argument(
        "--output-format", "--format", dest="format", choices=_formats(), default="text", help="report format"
    )
    c.add_argument("--select", action="append", metavar="RULES", help="only these rules (ids or prefixes)")
    c.add_argument(
        "--extend-select", action="append", metavar="RULES", help="add these rules to the selection"
    )
    c.add_argument("--ignore", action="append", metavar="RULES", help="skip these rules (ids or prefixes)")
    c.add_argument(
        "--target",
        metavar="PROFILE",
        help="hardware profile: cpu, sm_80, sm_86, sm_89, sm_90 or a profile .toml",
    )
    c.add_argument("--output-file", "-o", metavar="FILE", help="write the --format report here")
    c.add_argument("--sarif", metavar="FILE", help="also write SARIF here")
    c.add_argument("--junit", metavar="FILE", help="also write JUnit XML here")
    c.add_argument("--json", metavar="FILE", help="also write JSON here")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are reported")
    c.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="check only shard K of N (a CI matrix); `merge-reports` joins the shards' JSON reports",
    )
    c.set_defaults(func=cmd_ci)

    m = subparsers.add_parser(
        "merge-reports",
        help="merge the JSON reports of `ci --shard K/N` into the report the full run writes",
    )
    m.add_argument("reports", nargs="+", metavar="SHARD.json", help="one `ci --shard` JSON report per shard")
    m.add_argument(
        "--output-format", "--format", dest="format", choices=_formats(), default="text", help="report format"
    )
    m.add_argument("--output-file", "-o", metavar="FILE", help="write the --format report here")
    m.add_argument("--sarif", metavar="FILE", help="also write SARIF here")
    m.add_argument("--junit", metavar="FILE", help="also write JUnit XML here")
    m.add_argument("--json", metavar="FILE", help="also write JSON here")
    m.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are reported")
    m.set_defaults(func=cmd_merge_reports)

    r = subparsers.add_parser("replay", help="re-run every stored failing case (.warp-harness/repros)")
    r.add_argument("path", nargs="?", default=".", metavar="WORKSPACE", help="default: .")
    _common(r)
    _executor_flags(r)
    r.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=("text", "json"),
        default="text",
        help="report format",
    )
    r.set_defaults(func=cmd_replay)

    b = subparsers.add_parser(
        "bench", help="validate, then benchmark every contracted kernel, headless; print a table"
    )
    b.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files and folders (default: .)")
    _common(b)
    _executor_flags(b)
    b.add_argument(
        "--target",
        "--profile",
        dest="profile",
        metavar="PROFILE",
        help="hardware profile for the %% of peak: a bundled name (sm_90) or a .toml "
        "(warp-harness calibrate)",
    )
    b.add_argument("--repeats", type=int, metavar="N", help="timed launches per kernel (default 50)")
    b.add_argument("--max-time", type=float, metavar="S", help="stop timing a kernel after S seconds")
    b.add_argument("--memory-mb", type=int, metavar="MB", help="memory limit of the worker")
    b.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=("text", "json"),
        default="text",
        help="report format",
    )
    b.add_argument("--output-file", "-o", metavar="FILE", help="write the report here")
    b.set_defaults(func=cmd_bench)

    k = subparsers.add_parser(
        "calibrate", help="measure a device (copy bandwidth, GEMM rate, shared memory, SMs); write a profile"
    )
    k.add_argument("--device", default="cpu", metavar="DEV", help="cpu or cuda:N (default cpu)")
    k.add_argument(
        "--output-file",
        "--output",
        "-o",
        dest="output",
        metavar="FILE.toml",
        help="write the hardware profile here",
    )
    k.add_argument("--name", metavar="NAME", help="the profile's name (default calibrated-<arch>)")
    k.add_argument("--no-gemm", action="store_true", help="skip the matrix-product measurements")
    k.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=("text", "json"),
        default="text",
        help="report format",
    )
    k.set_defaults(func=cmd_calibrate)

    t = subparsers.add_parser(
        "tune", help="try a contract's tunables: drop what the profile forbids, benchmark the rest"
    )
    t.add_argument("path", metavar="FILE", help="the module whose contract names the tunables")
    _common(t)
    _executor_flags(t)
    t.add_argument("--kernel", metavar="NAME", help="the contracted kernel to tune (when several)")
    t.add_argument("--target", metavar="PROFILE", help="profile the static rules check candidates against")
    t.add_argument("--repeats", type=int, metavar="N", help="timed launches per candidate")
    t.add_argument(
        "--memory-mb",
        type=int,
        metavar="MB",
        help="memory limit of each worker (--jobs N: N workers, N times this)",
    )
    t.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        metavar="N",
        help="compile and validate N candidates at once (each in its own worker); timing stays one at a time",
    )
    t.set_defaults(func=cmd_tune)


def _err(text: str) -> None:
    print(f"warp-harness: {text}", file=sys.stderr)


def cmd_daemon(args: argparse.Namespace) -> int:
    from warp_harness.config import ConfigError
    from warp_harness.daemon.server import Daemon, DaemonAlreadyRunning

    root = Path(args.path)
    if not root.is_dir():
        _err(f"{root} is not a folder")
        return 2
    try:
        daemon = Daemon(
            root,
            trust=args.trust,
            runtime_overrides=_runtime_overrides(args),
            socket_path=Path(args.socket) if args.socket else None,
            watch=not args.no_watch,
            debounce_ms=args.debounce_ms,
            verbose=args.verbose,
            first_pass=args.first_pass,
        )
    except ConfigError as exc:
        _err(f"configuration error: {exc}")
        return 2

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            # a clean stop: worker killed, socket, private state and .warp-harness/daemon.json
            # removed, lock released, exit 0
            loop.add_signal_handler(sig, daemon.request_stop, sig.name)
        await daemon.run()

    try:
        asyncio.run(main())
    except DaemonAlreadyRunning as exc:
        _err(str(exc))
        return 1
    except PermissionError as exc:  # the socket folder is not ours, or not a folder
        _err(str(exc))
        return 2
    return 0


def _write(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8", errors="surrogateescape")


def cmd_ci(args: argparse.Namespace) -> int:
    from warp_harness.config import ConfigError
    from warp_harness.daemon.ci import GitError, changed_files, run_ci

    paths = [Path(p) for p in args.paths]
    missing = [p for p in paths if not p.exists()]
    if missing:
        _err(f"no such file or directory: {', '.join(map(str, missing))}")
        return 2
    if args.base is not None and not args.changed_files:
        _err("--base REF needs --changed-files (it names the commit the changed files are counted from)")
        return 2
    if args.changed_files:
        try:
            changed: list[Path] = []
            for p in paths:
                root = p if p.is_dir() else p.parent
                # only an explicit --trust lets git run what the repository's own config names
                listed = changed_files(root, args.base, trusted=args.trust is True)
                changed += [c for c in listed if p.is_dir() or c == p.resolve()]
        except GitError as exc:
            _err(str(exc))
            return 2
        paths = list(dict.fromkeys(changed))
        if not paths:
            print("warp-harness ci: no changed Python files", file=sys.stderr)
            if args.shard is None:
                return 0  # a shard still writes its (empty) report: merge-reports expects one per shard
    overrides, problem = _rule_overrides(args)
    if problem:
        _err(problem)
        return 2
    from warp_harness.rule_ids import warn_unknown_configured_codes

    warn_unknown_configured_codes(paths)
    from warp_harness.daemon.ray_executor import RayUnavailable

    try:
        with progress_reporter(sys.stderr) as on_progress:
            outcome = run_ci(
                paths,
                trust=args.trust,
                overrides=overrides,
                runtime_overrides=_runtime_overrides(args),
                static_only=args.static_only,
                on_progress=on_progress,
                executor=_executor(args, paths[0] if paths else Path.cwd()),
                shard=args.shard,
            )
    except ConfigError as exc:
        _err(f"configuration error: {exc}")
        return 2
    except RayUnavailable as exc:
        _err(str(exc))
        return 2
    return _emit_reports(args, outcome)


def cmd_merge_reports(args: argparse.Namespace) -> int:
    from warp_harness.daemon.shard_merge import MergeError, merge_reports

    try:
        outcome = merge_reports([Path(p) for p in args.reports])
    except MergeError as exc:
        _err(f"merge-reports: {exc}")
        return 2
    return _emit_reports(args, outcome)


def _emit_reports(args: argparse.Namespace, outcome: Any) -> int:
    """Write ``outcome`` (a CiOutcome) as ``ci`` does: the --format report to --output-file or
    stdout, the --sarif/--junit/--json copies, the summary on stderr; the exit code."""
    from warp_harness.daemon.ci import rule_infos, summary
    from warp_harness.daemon.requests import harness_version
    from warp_harness.output import render

    rules = rule_infos()
    version = harness_version()

    def report_in(fmt: str) -> str:
        text = render(fmt, outcome.results, rules=rules, tool_version=version)
        if fmt == "json":
            return _with_files(text, outcome)
        return _sarif_category(text, outcome.shard) if fmt == "sarif" and outcome.shard else text

    report = report_in(args.format)
    if args.output_file:
        _write(args.output_file, report)
    else:
        sys.stdout.write(report)
    for fmt, target in (("sarif", args.sarif), ("junit", args.junit), ("json", args.json)):
        if target:
            _write(target, report_in(fmt))
    print(summary(outcome), file=sys.stderr)
    return 0 if args.exit_zero or outcome.errors == 0 else 1


def _rule_overrides(args: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """--select/--extend-select/--ignore/--target as `check` takes them, and a usage problem (or None)."""
    from warp_harness.cli import _overrides, _unknown_selectors
    from warp_harness.hardware import UnknownProfileError, load_profile

    overrides = _overrides(args)
    problem = _unknown_selectors(overrides)
    if problem is None and "target" in overrides:
        try:
            load_profile(overrides["target"])
        except UnknownProfileError as exc:
            problem = str(exc)
    return overrides, problem


def _with_files(report: str, outcome: Any) -> str:
    """The JSON report with the per-file entries (status, seed, repros, kernels, timings) and the
    summary beside its ``results``; the records keep their schema."""
    import json

    document = json.loads(report)
    document["files"] = outcome.files
    document["summary"] = {
        "files": len(outcome.results),
        "errors": outcome.errors,
        "warnings": outcome.warnings,
        "trusted": outcome.trusted,
        "static_only": outcome.static_only,
        "dynamic_files": outcome.dynamic_files,
        "repros": outcome.repros,
    }
    if outcome.shard is not None:
        document["shard"] = outcome.shard
    from warp_harness.output.model import strict_json

    return strict_json(document, indent=2, ensure_ascii=False) + "\n"


def _sarif_category(report: str, shard: dict[str, Any]) -> str:
    """A shard's SARIF names its shard in ``automationDetails.id``: code scanning keeps one upload
    per category, so the shards' uploads do not replace one another."""
    import json

    document = json.loads(report)
    for run in document.get("runs", []):
        run["automationDetails"] = {"id": f"warp-harness-ci/shard-{shard['index']}-of-{shard['count']}/"}
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def cmd_replay(args: argparse.Namespace) -> int:
    from contextlib import closing

    from warp_harness.config import ConfigError, load_settings
    from warp_harness.daemon import replay_stored, repros
    from warp_harness.daemon.executor import make_executor
    from warp_harness.daemon.options import load_runtime_options
    from warp_harness.daemon.ray_executor import RayUnavailable

    if not Path(args.path).is_dir():
        _err(f"{args.path} is not a folder" if Path(args.path).exists() else f"no such folder: {args.path}")
        return 2
    root = Path(args.path).resolve()
    settings = load_settings(root)
    trusted = settings.trust if args.trust is None else args.trust
    workspace = settings.root or root
    loaded = repros.load_cases(workspace)
    cases, corrupt = loaded.cases, loaded.corrupt
    if not trusted:
        _err("workspace not trusted: stored cases run kernels; pass --trust or set trust = true")
        return 2
    for file, why in loaded.refused:  # a case naming ../x.py or /abs/x.py: never run
        _err(f"refused {file}: {why}")
    if not cases and not loaded.refused:
        print(f"warp-harness replay: no stored cases in {repros.library_dir(workspace)}", file=sys.stderr)
        return 0
    rows: list[dict[str, Any]] = []
    if cases:
        options = load_runtime_options(workspace, _runtime_overrides(args))
        try:
            sup = make_executor(_executor(args, workspace), workspace, options)
        except (ConfigError, RayUnavailable) as exc:
            _err(str(exc))
            return 2
        with closing(sup), progress_reporter(sys.stderr) as show:

            def starting(number: int, stored: repros.StoredCase) -> None:
                if show is not None:
                    show({"kind": "file", "path": f"replay {number}/{len(cases)} {stored.label}"})

            # side by side as the executor has slots (one locally), answered in the library's order
            results = replay_stored.replay(sup, cases, on_start=starting, on_progress=show)
        for stored, (status, records) in zip(cases, results, strict=True):
            rows.append(
                {
                    "case": stored.label,
                    "file": stored.file.relative_to(workspace).as_posix(),
                    "status": status,
                    "records": [r.to_dict() for r in records if r.severity.value in ("error", "warning")],
                }
            )
    failing = [r for r in rows if r["status"] != "pass"]
    if args.format == "json":
        refused = [{"file": str(f), "reason": why} for f, why in loaded.refused]
        from warp_harness.output.model import strict_json

        print(
            strict_json(
                {"cases": rows, "corrupt": [str(c) for c in corrupt], "refused": refused},
                indent=2,
            )
        )
    else:
        for r in rows:
            print(f"{'PASS' if r['status'] == 'pass' else r['status'].upper():8} {r['case']}")
            for rec in r["records"][:1]:
                print(f"         {rec['message']}")
        for c in corrupt:
            print(f"CORRUPT  {c} (discarded)")
        for f, why in loaded.refused:
            print(f"REFUSED  {f}: {why}")
        print(f"{len(rows) - len(failing)} passed, {len(failing)} failing", file=sys.stderr)
    return 1 if failing or loaded.refused else 0


def cmd_bench(args: argparse.Namespace) -> int:

    from warp_harness.config import ConfigError
    from warp_harness.daemon.benchcmd import NotTrusted, run_bench, table

    paths = [Path(p) for p in args.paths]
    missing = [p for p in paths if not p.exists()]
    if missing:
        _err(f"no such file or directory: {', '.join(map(str, missing))}")
        return 2
    overrides = _runtime_overrides(args)
    for key, value in (
        ("profile", args.profile),
        ("bench_repeats", args.repeats),
        ("bench_max_time_s", args.max_time),
        ("memory_mb", args.memory_mb),
    ):
        if value is not None:
            overrides[key] = value
    if args.profile:
        from warp_harness.hardware import UnknownProfileError, load_profile

        try:
            load_profile(args.profile)
        except UnknownProfileError as exc:
            _err(str(exc))
            return 2
    from warp_harness.daemon.ray_executor import RayUnavailable

    try:
        with progress_reporter(sys.stderr) as show:
            outcome = run_bench(
                paths,
                trust=args.trust,
                runtime_overrides=overrides,
                on_progress=show,
                executor=_executor(args, paths[0] if paths else Path.cwd()),
            )
    except (NotTrusted, RayUnavailable) as exc:
        _err(str(exc))
        return 2
    except ConfigError as exc:
        _err(f"configuration error: {exc}")
        return 2
    if args.format == "json":
        from warp_harness.output.model import strict_json

        report = strict_json(
            {
                "rows": [r.to_dict() for r in outcome.rows],
                "files": outcome.files,
                "problems": outcome.problems,
                "warnings": outcome.warnings,
            },
            indent=2,
        )
        report += "\n"
    else:
        report = table(outcome)
    if args.output_file:
        _write(args.output_file, report)
    else:
        sys.stdout.write(report)
    timed = sum(1 for r in outcome.rows if r.status == "timed")
    print(
        f"warp-harness bench: {len(outcome.files)} module(s), {len(outcome.rows)} kernel run(s), "
        f"{timed} timed, {sum(1 for r in outcome.rows if not r.ok)} not ok",
        file=sys.stderr,
    )
    if not outcome.rows:
        return 0 if not outcome.problems else 1
    return 0 if outcome.ok else 1


def cmd_calibrate(args: argparse.Namespace) -> int:

    from warp_harness.daemon import calibrate

    device = args.device
    if device != "cpu" and not (device.startswith("cuda") and (device == "cuda" or device[5:].isdigit())):
        _err(f"unknown device {device!r}; use cpu or cuda:N")
        return 2
    if device == "cuda":
        device = "cuda:0"
    try:
        with progress_reporter(sys.stderr) as show:
            gemm = not args.no_gemm
            cal = calibrate.calibrate(device, gemm=gemm, reference=gemm, on_progress=show)
    except (RuntimeError, ValueError) as exc:
        _err(f"calibration on {device} failed: {exc}")
        return 1
    if args.output:
        calibrate.write_profile(cal, Path(args.output), args.name)
    if args.format == "json":
        from warp_harness.output.model import strict_json

        print(
            strict_json(
                {
                    "device": cal.device,
                    "device_name": cal.device_name,
                    "measurements": [m.to_dict() for m in cal.measurements],
                    "profile": calibrate.profile_fields(cal, args.name),
                },
                indent=2,
            )
        )
    else:
        print(calibrate.summary(cal))
        if args.output:
            print(f"profile written to {args.output} (use it with --target {args.output})")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from warp_harness.config import ConfigError, load_settings
    from warp_harness.daemon.benchcmd import NotTrusted
    from warp_harness.daemon.cache import OutsideWorkspaceError
    from warp_harness.daemon.ray_executor import RayUnavailable
    from warp_harness.daemon.tune import TuneSyntaxError, pareto, report, run_tune, store_result

    path = Path(args.path)
    if not path.is_file():
        _err(f"no such file: {path}")
        return 2
    overrides = _runtime_overrides(args)
    if args.repeats is not None:
        overrides["bench_repeats"] = args.repeats
    if args.memory_mb is not None:
        overrides["memory_mb"] = args.memory_mb
    if args.jobs < 1:
        _err("--jobs must be at least 1")
        return 2
    try:
        with progress_reporter(sys.stderr) as show:
            if show is not None:
                show({"label": f"tune: {path}" + (f" {args.kernel}" if args.kernel else "")})
            kernel, rows = run_tune(
                path,
                kernel=args.kernel,
                trust=args.trust,
                runtime_overrides=overrides,
                target=args.target,
                jobs=args.jobs,
                on_progress=show,
                executor=_executor(args, path),
            )
    except TuneSyntaxError as exc:
        print(exc.render(args.path), file=sys.stderr)
        return 2
    except (NotTrusted, ValueError, ConfigError, RayUnavailable) as exc:
        _err(str(exc))
        return 2
    sys.stdout.write(report(kernel, rows))
    workspace = load_settings(path.resolve().parent).root or path.resolve().parent
    try:
        stored = store_result(workspace, path, kernel, rows, args.target)
        print(f"result: {stored} (the language server offers the best configuration as a code action)")
    except (OSError, OutsideWorkspaceError) as exc:
        _err(f"tuning result not stored: {exc}")
    return 0 if pareto(rows) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m warp_harness.daemon")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_subcommands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    code: int = func(args)
    return code
