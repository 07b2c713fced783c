"""The `warp-harness` command line: check, rule, rules (and the daemon's and server's commands)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# argparse and the settings are imported by the commands that use them: `serve` starts without either
# (`main`), the language server's reply to `initialize` waits for every import before it
if TYPE_CHECKING:
    import argparse

    from warp_harness.daemon.findings import DynamicRule
    from warp_harness.output.model import FileResult, RuleInfo
    from warp_harness.record import Record


def tool_version() -> str:
    from warp_harness import __version__

    return __version__


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if args.select:
        overrides["select"] = [s for group in args.select for s in _csv(group)]
    if args.ignore:
        overrides["ignore"] = [s for group in args.ignore for s in _csv(group)]
    if getattr(args, "extend_select", None):
        overrides["extend_select"] = [s for group in args.extend_select for s in _csv(group)]
    if getattr(args, "exclude", None):
        overrides["exclude"] = [s for group in args.exclude for s in _csv(group)]
    if getattr(args, "extend_exclude", None):
        overrides["extend_exclude"] = [s for group in args.extend_exclude for s in _csv(group)]
    if args.target:
        overrides["target"] = args.target
    if getattr(args, "config", None):
        from warp_harness.config import CONFIG_FILE

        overrides[CONFIG_FILE] = str(Path(args.config).resolve())
    return overrides


def _unknown_selectors(overrides: dict[str, Any]) -> str | None:
    """A message naming the --select/--ignore codes that match no rule (id or prefix), else None."""
    if not any(overrides.get(option) for option in ("select", "ignore", "extend_select")):
        return None  # without importing every rule
    from warp_harness.rule_ids import unknown_codes

    for option in ("select", "ignore", "extend_select"):
        bad = unknown_codes(overrides.get(option, ()))
        if bad:
            return (
                f"invalid rule code or prefix for --{option.replace('_', '-')}: {', '.join(bad)} "
                "(`warp-harness rules` lists them)"
            )
    return None


def _check_usage(args: argparse.Namespace) -> str | None:
    """A usage problem with the check options (one line), else None."""
    if args.stdin_filename is not None and args.paths not in ([], ["-"]):
        return "--stdin-filename reads the text from stdin: give `-` or no PATH"
    if args.watch and (args.paths == ["-"] or args.stdin_filename is not None or args.diff or args.add_noqa):
        return "--watch checks files again when they are saved: not with stdin, --diff or --add-noqa"
    if args.add_noqa and (args.fix or args.diff or args.paths == ["-"] or args.stdin_filename is not None):
        return "--add-noqa writes comments into the files: not with --fix, --diff or stdin"
    if "-" in args.paths and len(args.paths) > 1:
        return "`-` (stdin) cannot be mixed with other paths"
    if args.diff and args.fix:
        return "--diff and --fix cannot be used together (--diff shows what --fix would write)"
    return None


def _cmd_check(args: argparse.Namespace) -> int:
    from warp_harness.engine import missing_paths

    problem = _check_usage(args)
    if problem:
        print(f"warp-harness: {problem}", file=sys.stderr)
        return 2
    if not args.paths:  # as ruff: stdin when it names a file, else the current folder
        args.paths = ["-"] if args.stdin_filename is not None else ["."]
    paths = [Path(p) for p in args.paths]
    missing = missing_paths([p for p in paths if str(p) != "-"])
    if missing:
        print(f"warp-harness: no such file or directory: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    overrides = _overrides(args)
    unknown = _unknown_selectors(overrides)
    if unknown:
        print(f"warp-harness: {unknown}", file=sys.stderr)
        return 2
    if args.paths != ["-"]:
        from warp_harness.rule_ids import warn_unknown_configured_codes

        warn_unknown_configured_codes(paths)
    if "target" in overrides:
        from warp_harness.hardware import UnknownProfileError, load_profile

        try:
            load_profile(overrides["target"])
        except UnknownProfileError as exc:
            print(f"warp-harness: {exc}", file=sys.stderr)
            return 2
    if args.show_settings:
        return _show_settings(paths, overrides)
    if args.watch:
        from warp_harness.check_watch import watch_check

        return watch_check(paths, lambda: _check_paths(args, paths, overrides))
    if args.paths == ["-"]:
        from warp_harness.builtins import load_table

        return _check_stdin(args, overrides, load_table())
    return _check_paths(args, paths, overrides)


def _check_paths(args: argparse.Namespace, paths: list[Path], overrides: dict[str, Any]) -> int:
    """One check of ``paths`` (files and folders): report, fixes, exit code."""
    from warp_harness.batch import check_files, lines_for_format

    results: list[FileResult] = check_files(
        paths,
        overrides,
        jobs=getattr(args, "jobs", None),
        cache=not getattr(args, "no_cache", False),
        # --fix re-checks and renders the files it changed in full
        lines="all" if args.fix else lines_for_format(args.output_format),
    )
    if args.add_noqa:
        return _add_noqa(results)
    fixing = _Fixing(args, overrides, None)  # the table: loaded by a re-check, if any
    results = [fixing.fix(result) for result in results]
    if args.diff:
        sys.stdout.write("".join(fixing.diffs))
        _print_would_fix(fixing)
        return 1 if fixing.diffs else 0
    if not results:
        # as ruff: a warning, exit 0; no "All checks passed!" for a check that checked nothing
        print("warp-harness: warning: no Python files found under the given path(s)", file=sys.stderr)
    output = _report(args, results)
    if args.fix and args.output_format == "text" and not args.statistics and not args.quiet:
        output += f"Fixed {fixing.total} issue{'s' if fixing.total != 1 else ''}.\n"
    if args.show_fixes and args.output_format == "text":
        output += _show_fixes(fixing, results)
    if not results and args.output_format == "text":
        output = ""
    if args.output_file:
        Path(args.output_file).write_text(output, encoding="utf-8", errors="surrogateescape")
    else:
        sys.stdout.write(output)
    return _exit_code(args, results)


def _add_noqa(results: Sequence[FileResult]) -> int:
    """`--add-noqa`: write a suppression for each finding into its file; say how many lines changed."""
    from warp_harness.add_noqa import add_noqa

    total = skipped = 0
    for result in results:
        path = Path(result.path)
        if path.suffix != ".py" or not result.records:
            continue
        text = path.read_bytes().decode("utf-8", errors="surrogateescape")
        done = add_noqa(text, result.records)
        if done.added:
            path.write_bytes(done.text.encode("utf-8", errors="surrogateescape"))
        total += done.added
        skipped += done.skipped
    note = f" ({skipped} line{'s' if skipped != 1 else ''} inside a string skipped)" if skipped else ""
    print(f"Added {total} noqa directive{'s' if total != 1 else ''}.{note}", file=sys.stderr)
    return 0


def _show_settings(paths: Sequence[Path], overrides: dict[str, Any]) -> int:
    """`--show-settings`: for each PATH, the configuration file used and every resolved setting."""
    from dataclasses import fields

    from warp_harness.config import find_pyproject, load_settings

    for path in paths:
        settings = load_settings(path, overrides)
        source = find_pyproject(path)
        print(f"Resolved settings for: {path}")
        print(f"Settings path: {source if source is not None else '(none: the defaults)'}")
        for item in fields(settings):
            value = getattr(settings, item.name)
            if isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = {str(k): getattr(v, "value", v) for k, v in value.items()}
            print(f"{item.name.replace('_', '-')} = {value!r}" if item.name != "root" else f"root = {value}")
        print()
    return 0


def _exit_code(args: argparse.Namespace, results: Sequence[FileResult]) -> int:
    has_error = any(r.severity.value == "error" for f in results for r in f.records)
    return 0 if args.exit_zero or not has_error else 1


class _RuleInfos(Mapping[str, "RuleInfo"]):
    """Every rule's description, loaded on first use: the formats that show none, and a report
    without records, never import the rules."""

    def __init__(self) -> None:
        self._infos: dict[str, RuleInfo] | None = None

    def _loaded(self) -> dict[str, RuleInfo]:
        if self._infos is None:
            from warp_harness.rules.info import rule_infos

            self._infos = rule_infos()
        return self._infos

    def __getitem__(self, key: str) -> RuleInfo:
        return self._loaded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _report(args: argparse.Namespace, results: Sequence[FileResult]) -> str:
    from warp_harness.output import render

    if args.statistics:
        return _statistics(
            args.output_format, results, unsafe_fixes=bool(getattr(args, "unsafe_fixes", False))
        )
    color = use_color(args.color, sys.stdout, to_file=args.output_file is not None)
    if getattr(args, "quiet", False) and args.output_format == "text":
        from warp_harness.output.text import render_text_quiet

        return render_text_quiet(list(results), color=color)
    return render(
        args.output_format, list(results), rules=_RuleInfos(), tool_version=tool_version(), color=color
    )


def use_color(choice: str, stream: Any, to_file: bool = False) -> bool:
    """--color always/never; auto: never into a file, else NO_COLOR (off), then FORCE_COLOR (on),
    then whether ``stream`` is a terminal (https://no-color.org, https://force-color.org; CPython's
    order: NO_COLOR wins)."""
    if choice != "auto":
        return choice == "always"
    if to_file or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    return bool(getattr(stream, "isatty", lambda: False)())


def _statistics(output_format: str, results: Sequence[FileResult], *, unsafe_fixes: bool = False) -> str:
    """One line per rule, most frequent first, as `ruff check --statistics` (JSON: a list).

    ``[*]``: `--fix` would fix some of the rule's records (safe fixes, and unsafe ones under
    ``--unsafe-fixes``), as the summary counts them; ``[-]``: only unsafe fixes, which ``--unsafe-fixes``
    enables; ``[ ]``: no fix."""
    import json
    from collections import Counter

    from warp_harness.rules import rule_by_id

    counts = Counter(r.rule for f in results for r in f.records)
    applicable = {
        r.rule
        for f in results
        for r in f.records
        if r.fix is not None and r.fix.edits and (r.fix.safe or unsafe_fixes)
    }
    unsafe = {
        r.rule for f in results for r in f.records if r.fix is not None and r.fix.edits and not r.fix.safe
    }
    rows: list[dict[str, Any]] = []
    for rule, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        cls = rule_by_id(rule)
        rows.append(
            {
                "code": rule,
                "name": cls.name if cls else "",
                "count": count,
                "fixable": rule in applicable,
                "unsafe_fixable": rule in unsafe,
            }
        )
    if output_format == "json":
        return json.dumps(rows, indent=2) + "\n"
    width = max((len(str(r["count"])) for r in rows), default=1)

    def mark(row: dict[str, Any]) -> str:
        return "[*]" if row["fixable"] else "[-]" if row["unsafe_fixable"] else "[ ]"

    return "".join(f"{r['count']:>{width}}\t{r['code']}\t{mark(r)} {r['name']}\n" for r in rows)


class _Fixing:
    """--fix (write), --diff (a unified diff instead), --unsafe-fixes, applied to each FileResult after
    the check, every round re-checking the fixed text until it is stable."""

    def __init__(self, args: argparse.Namespace, overrides: dict[str, Any], table: Any) -> None:
        self.write = bool(args.fix)
        self.diff = bool(args.diff)
        self.safe_only = not args.unsafe_fixes
        self.overrides = overrides
        self.table = table
        self.total = 0
        self.applied: dict[str, list[Record]] = {}  # shown path -> the records whose fix was applied
        self.diffs: list[str] = []

    def wanted(self, result: FileResult) -> bool:
        return (self.write or self.diff) and any(
            r.fix is not None and (r.fix.safe or not self.safe_only) for r in result.records
        )

    def fix(self, result: FileResult) -> FileResult:
        if not self.wanted(result):
            return result
        if result.path.endswith(".ipynb"):  # fixes written into the notebook's cells
            from warp_harness.notebook_fixes import fix_notebook

            return fix_notebook(self, result)
        from warp_harness.safe_read import read_regular_text

        path = Path(result.path)
        text = read_regular_text(path)  # a regular file under the cap: the check read it
        new_text, result = self.fix_text(text, result, path)
        if new_text != text:
            if self.write:
                path.write_text(new_text, encoding="utf-8")
            else:
                self.diffs.append(_unified_diff(text, new_text, result.path))
        return result

    def fix_text(self, text: str, result: FileResult, settings_from: Path) -> tuple[str, FileResult]:
        """The text with the fixes applied, and its records (--diff: those of the text as it is)."""
        from warp_harness.config import load_settings
        from warp_harness.engine import check_bytes
        from warp_harness.fixes import fix_until_stable

        settings = load_settings(settings_from, self.overrides)
        first = result
        last = result

        def recheck(new_text: str) -> Sequence[Record]:
            nonlocal last
            last = check_bytes(new_text.encode("utf-8"), result.path, settings, self.table)
            return last.records

        text, _, applied, fixed = fix_until_stable(text, result.records, recheck, self.safe_only)
        self.total += applied
        if fixed:
            self.applied.setdefault(result.path, []).extend(fixed)
        return text, (last if self.write else first)


def _unified_diff(old: str, new: str, path: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def _print_would_fix(fixing: _Fixing) -> None:
    n = fixing.total
    print(f"Would fix {n} issue{'s' if n != 1 else ''}." if n else "No fixes available.", file=sys.stderr)


def _show_fixes(fixing: _Fixing, results: Sequence[FileResult]) -> str:
    """--show-fixes: the fixes applied (with --fix), else those available, per file and rule."""
    from collections import Counter

    if fixing.write:
        per_file = fixing.applied
        head = f"Fixed {fixing.total} issue{'s' if fixing.total != 1 else ''}:"
    else:
        per_file = {f.path: [r for r in f.records if r.fix is not None] for f in results}
        per_file = {p: rs for p, rs in per_file.items() if rs}
        total = sum(len(rs) for rs in per_file.values())
        head = f"{total} fix{'es' if total != 1 else ''} available:"
    if not per_file:
        return ""
    out = [head]
    for path, records in per_file.items():
        out.append(f"- {path}:")
        counts = Counter((r.rule, r.fix.title, r.fix.safe) for r in records if r.fix is not None)
        for (rule, title, safe), count in counts.items():
            out.append(f"    {count} × {rule} ({title}){'' if safe else ' [unsafe]'}")
    return "\n".join(out) + "\n"


def _check_stdin(args: argparse.Namespace, overrides: dict[str, Any], table: Any) -> int:
    """`check -`: the text from stdin, shown as --stdin-filename (whose folder gives the settings);
    with --fix the fixed text goes to stdout and the report to stderr, as ruff does."""
    from warp_harness.config import load_settings
    from warp_harness.engine import check_bytes

    shown = args.stdin_filename or "-"
    settings_from = Path(args.stdin_filename) if args.stdin_filename else Path.cwd() / "-"
    data = sys.stdin.buffer.read()
    result = check_bytes(data, shown, load_settings(settings_from, overrides), table)
    fixing = _Fixing(args, overrides, table)
    text = data.decode("utf-8", errors="surrogateescape")
    new_text = text
    if fixing.wanted(result):
        new_text, result = fixing.fix_text(text, result, settings_from)
    if args.diff:
        if new_text != text:
            sys.stdout.write(_unified_diff(text, new_text, shown))
        _print_would_fix(fixing)
        return 1 if new_text != text else 0
    report = _report(args, [result])
    if args.show_fixes and args.output_format == "text":
        report += _show_fixes(fixing, [result])
    if args.fix:
        sys.stdout.write(new_text)
        sys.stderr.write(report)
    elif args.output_file:
        Path(args.output_file).write_text(report, encoding="utf-8", errors="surrogateescape")
    else:
        sys.stdout.write(report)
    return _exit_code(args, [result])


def _cmd_rule(args: argparse.Namespace) -> int:
    import json

    from warp_harness.daemon.findings import dynamic_rule
    from warp_harness.rules import rule_by_id

    cls = rule_by_id(args.rule)
    if cls is None:
        return _print_dynamic_rule(args, dynamic_rule(args.rule))
    if args.output_format == "json":
        print(
            json.dumps(
                {
                    "id": cls.id,
                    "name": cls.name,
                    "summary": cls.summary,
                    "severity": cls.severity.value,
                    "priority": cls.priority,
                    "fixable": cls.fixable,
                    "tier": "static",
                    "url": cls.url(),
                    "doc": cls.doc(),
                },
                indent=2,
            )
        )
    else:
        print(
            f"{cls.doc()}\n\nseverity: {cls.severity.value}, priority: {cls.priority}, "
            f"fix: {'yes' if cls.fixable else 'no'}"
        )
    return 0


def _print_dynamic_rule(args: argparse.Namespace, rule: DynamicRule | None) -> int:
    import json

    if rule is None:
        print(f"warp-harness: unknown rule {args.rule!r}; `warp-harness rules` lists them", file=sys.stderr)
        return 2
    if args.output_format == "json":
        print(json.dumps({**_dynamic_entry(rule), "url": rule.url, "doc": rule.doc()}, indent=2))
    else:
        print(f"{rule.doc()}\n\ntier: dynamic, stage: {rule.stage.value}, severity: {rule.severity.value}")
    return 0


def _dynamic_entry(rule: DynamicRule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "summary": rule.summary,
        "severity": rule.severity.value,
        "fixable": False,
        "tier": "dynamic",
        "stage": rule.stage.value,
    }


def _cmd_rules(args: argparse.Namespace) -> int:
    import json

    from warp_harness.daemon.findings import DYNAMIC_RULES, dynamic_markdown
    from warp_harness.rules import rule_classes
    from warp_harness.rules.info import rules_markdown

    if args.output_format == "markdown":
        sys.stdout.write(rules_markdown() + "\n" + dynamic_markdown())
    elif args.output_format == "json":
        static = [
            {
                "id": c.id,
                "name": c.name,
                "summary": c.summary,
                "severity": c.severity.value,
                "fixable": c.fixable,
                "tier": "static",
                "stage": c.stage.value,
            }
            for c in rule_classes()
        ]
        print(json.dumps(static + [_dynamic_entry(r) for r in DYNAMIC_RULES], indent=2))
    else:
        # one line per rule, sorted by id (WH### static, then WHD### dynamic), with its stage
        rows = [(c.id, c.severity, c.stage, c.fixable, c.name, c.summary) for c in rule_classes()]
        rows += [(r.id, r.severity, r.stage, False, r.name, r.summary) for r in DYNAMIC_RULES]
        for rid, severity, stage, fixable, name, summary in rows:
            fix = "fix" if fixable else ""
            print(f"{rid:<7}{severity.value:<8} {stage.value:<12} {fix:<4}{name:<28} {summary}")
    return 0


class _OutputFormats:
    """`check --output-format`'s choices, read from `warp_harness.output` only when a parse or a help
    asks: the renderers' package (~5 ms) is not on the way of the other commands (the language
    server's start-up among them)."""

    def __contains__(self, value: object) -> bool:
        from warp_harness.output import FORMATS

        return value in FORMATS

    def __iter__(self) -> Iterator[str]:
        from warp_harness.output import FORMATS

        return iter(FORMATS)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; ``command``: only the named subcommand's module is imported (None: every one)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="warp-harness",
        description="Constraint checks, validation and benchmarks for NVIDIA Warp kernels.",
    )
    parser.add_argument("--version", action="version", version=f"warp-harness {tool_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="run the static checks on files and folders")
    check.add_argument(
        "paths", nargs="*", default=[], metavar="PATH", help="files and folders (default: .); `-` reads stdin"
    )
    check.add_argument(
        "--output-format",
        "--format",
        dest="output_format",
        choices=_OutputFormats(),
        default="text",
        help="report format",
    )
    check.add_argument("--output-file", "-o", metavar="FILE", help="write the report here instead of stdout")
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place (stdin: print the text)")
    check.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix/--diff: apply unsafe fixes too"
    )
    check.add_argument(
        "--diff",
        action="store_true",
        help="print a unified diff of the fixes instead of writing; exit 1 if any",
    )
    check.add_argument(
        "--show-fixes", action="store_true", help="list the fixes applied (with --fix) or available"
    )
    check.add_argument("--statistics", action="store_true", help="count the records per rule")
    check.add_argument(
        "--watch", "-w", action="store_true", help="check again whenever a file is saved (until Ctrl-C)"
    )
    check.add_argument(
        "--config",
        metavar="FILE",
        help="take the settings from FILE (a pyproject.toml, or a TOML file holding the table's keys) "
        "instead of the nearest pyproject.toml",
    )
    check.add_argument(
        "--quiet", "-q", action="store_true", help="print the findings only: no summary, no `Fixed N`"
    )
    check.add_argument(
        "--exclude",
        action="append",
        metavar="PATTERNS",
        help="exclude these paths/globs (comma-separated), instead of the configured `exclude`",
    )
    check.add_argument(
        "--extend-exclude",
        action="append",
        metavar="PATTERNS",
        help="exclude these paths/globs too, beside the configured `exclude`",
    )
    check.add_argument(
        "--show-settings", action="store_true", help="print the settings each PATH is checked with, and exit"
    )
    check.add_argument(
        "--add-noqa",
        action="store_true",
        help="add `# wh: ignore[...]` for every finding to its line (keeps a file's existing codes)",
    )
    check.add_argument(
        "--stdin-filename",
        metavar="NAME",
        help="read the text from stdin (with `-` or no PATH) and report it as NAME (its settings too)",
    )
    check.add_argument(
        "--select", action="append", metavar="RULES", help="only these rules (ids or prefixes)"
    )
    check.add_argument(
        "--extend-select", action="append", metavar="RULES", help="add these rules to the selection"
    )
    check.add_argument(
        "--ignore", action="append", metavar="RULES", help="skip these rules (ids or prefixes)"
    )
    check.add_argument(
        "--target",
        metavar="PROFILE",
        help="hardware profile: cpu, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120 or a profile .toml",
    )
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are reported")
    check.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text report (auto: on a terminal; NO_COLOR / FORCE_COLOR)",
    )
    check.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        metavar="N",
        help="check files in N processes (default: every CPU; small inputs use one)",
    )
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    check.set_defaults(func=_cmd_check)

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("rule", metavar="RULE", help="rule id (WH003) or name")
    rule.add_argument(
        "--output-format",
        "--format",
        dest="output_format",
        choices=("text", "json"),
        default="text",
        help="format",
    )
    rule.set_defaults(func=_cmd_rule)

    rules = sub.add_parser("rules", help="list every rule")
    rules.add_argument(
        "--output-format",
        "--format",
        dest="output_format",
        choices=("text", "json", "markdown"),
        default="text",
        help="format (markdown: docs/rules.md)",
    )
    rules.set_defaults(func=_cmd_rules)

    # The daemon's and server's commands cost their imports (asyncio, pygls...): only the module
    # of the chosen command is imported; every module when none or an unknown one is chosen (--help).
    wanted = _LAZY_COMMANDS.get(command or "", () if command in _CORE_COMMANDS else _LAZY_MODULES)
    for optional in _LAZY_MODULES:
        if optional not in wanted:
            continue
        try:
            module = __import__(optional, fromlist=["add_subcommands"])
        except ImportError:
            continue
        add = getattr(module, "add_subcommands", None)
        if add is not None:
            add(sub)
    return parser


_CORE_COMMANDS = frozenset({"check", "rule", "rules"})
_LAZY_MODULES = (
    "warp_harness.daemon.cli",
    "warp_harness.daemon.client_cli",
    "warp_harness.server.cli",
    "warp_harness.agents.cli",
    "warp_harness.capture.cli",
)
# command -> the module that registers it (tests/test_cli.py checks this against every module)
_LAZY_COMMANDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("daemon", "ci", "replay", "bench", "calibrate", "tune", "merge-reports"),
        ("warp_harness.daemon.cli",),
    ),
    **dict.fromkeys(("status", "results", "watch", "stop"), ("warp_harness.daemon.client_cli",)),
    "serve": ("warp_harness.server.cli",),
    "mcp": ("warp_harness.agents.cli",),
    **dict.fromkeys(("capture", "accept"), ("warp_harness.capture.cli",)),
}


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        import argparse

        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")
    return number


def _chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first argument not starting with "-"), if any."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse, with an unknown option reported by its subcommand's parser (its own usage line):
    argparse leaves options a subparser does not know to the top-level parser, whose usage is
    `warp-harness [-h] [--version] COMMAND`."""
    import argparse

    args, extra = parser.parse_known_args(argv)
    if extra:
        owner = parser
        command = getattr(args, "command", None)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                owner = action.choices[command]
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["serve"]:  # the language server: started without the other commands' parser
        from warp_harness.server.cli import main as serve

        return serve(argv[1:])
    from warp_harness.config import ConfigError

    parser = build_parser(_chosen_command(argv))
    args = _parse(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except ConfigError as exc:
        print(f"warp-harness: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
