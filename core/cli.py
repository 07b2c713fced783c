"""The `warp-harness` command line: check, rule, rules (and the daemon's and server's commands)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_harness.config import ConfigError

if TYPE_CHECKING:
    from warp_harness.daemon.findings import DynamicRule


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
    if args.target:
        overrides["target"] = args.target
    return overrides


def _unknown_selectors(overrides: dict[str, Any]) -> str | None:
    """A message naming the --select/--ignore codes that match no rule (id or prefix), else None."""
    from warp_harness.daemon.findings import DYNAMIC_RULES
    from warp_harness.engine import INTERNAL_RULE, UNREADABLE_RULE
    from warp_harness.rules import rule_classes

    ids = [c.id for c in rule_classes()] + [r.id for r in DYNAMIC_RULES] + [UNREADABLE_RULE, INTERNAL_RULE]
    for option in ("select", "ignore"):
        bad = [s for s in overrides.get(option, ()) if not any(i.startswith(s) for i in ids)]
        if bad:
            return (
                f"invalid rule code or prefix for --{option}: {', '.join(bad)} "
                "(`warp-harness rules` lists them)"
            )
    return None


def _cmd_check(args: argparse.Namespace) -> int:
    from warp_harness.engine import check_file, iter_python_files, missing_paths
    from warp_harness.fixes import apply_fixes
    from warp_harness.output import render
    from warp_harness.output.model import FileResult
    from warp_harness.rules.hardware import UnknownProfileError, load_profile
    from warp_harness.rules.info import rule_infos

    paths = [Path(p) for p in args.paths]
    missing = missing_paths(paths)
    if missing:
        print(f"warp-harness: no such file or directory: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    overrides = _overrides(args)
    unknown = _unknown_selectors(overrides)
    if unknown:
        print(f"warp-harness: {unknown}", file=sys.stderr)
        return 2
    if "target" in overrides:
        try:
            load_profile(overrides["target"])
        except UnknownProfileError as exc:
            print(f"warp-harness: {exc}", file=sys.stderr)
            return 2
    from warp_harness.builtins import load_table

    table = load_table()
    results: list[FileResult] = []
    fixed_total = 0
    for path in iter_python_files(paths, overrides):
        result = check_file(path, overrides, builtins=table)
        if args.fix and any(r.fix is not None and r.fix.safe for r in result.records):
            from warp_harness.safe_read import read_regular_text

            text = read_regular_text(path)  # a regular file under the cap: check_file read it
            for _ in range(5):  # fixes can expose or shift others; re-check until stable
                new_text, applied = apply_fixes(text, result.records)
                if not applied or new_text == text:
                    break
                fixed_total += applied
                text = new_text
                path.write_text(text, encoding="utf-8")
                result = check_file(path, overrides, builtins=table)
        results.append(result)
    if not results:
        # as ruff: a warning, exit 0; no "All checks passed!" for a check that checked nothing
        print("warp-harness: warning: no Python files found under the given path(s)", file=sys.stderr)
    output = render(
        args.output_format,
        results,
        rules=rule_infos(),
        tool_version=tool_version(),
        color=args.color == "always"
        or (args.color == "auto" and sys.stdout.isatty() and args.output_file is None),
    )
    if args.fix and args.output_format == "text":
        output += f"Fixed {fixed_total} issue{'s' if fixed_total != 1 else ''}.\n"
    if not results and args.output_format == "text":
        output = ""
    if args.output_file:
        Path(args.output_file).write_text(output, encoding="utf-8")
    else:
        sys.stdout.write(output)
    has_error = any(r.severity.value == "error" for f in results for r in f.records)
    return 0 if args.exit_zero or not has_error else 1


def _cmd_rule(args: argparse.Namespace) -> int:
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


def build_parser() -> argparse.ArgumentParser:
    from warp_harness.output import FORMATS

    parser = argparse.ArgumentParser(
        prog="warp-harness",
        description="Constraint checks, validation and benchmarks for NVIDIA Warp kernels.",
    )
    parser.add_argument("--version", action="version", version=f"warp-harness {tool_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="run the static checks on files and folders")
    check.add_argument("paths", nargs="*", default=["."], metavar="PATH")
    check.add_argument("--output-format", choices=FORMATS, default="text")
    check.add_argument("--output-file", "-o", metavar="FILE", help="write the report here instead of stdout")
    check.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    check.add_argument(
        "--select", action="append", metavar="RULES", help="only these rules (ids or prefixes)"
    )
    check.add_argument(
        "--ignore", action="append", metavar="RULES", help="skip these rules (ids or prefixes)"
    )
    check.add_argument(
        "--target",
        metavar="PROFILE",
        help="hardware profile: cpu, sm_80, sm_86, sm_89, sm_90 or a profile .toml",
    )
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are reported")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    check.set_defaults(func=_cmd_check)

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("rule", metavar="RULE", help="rule id (WH003) or name")
    rule.add_argument("--output-format", choices=("text", "json"), default="text")
    rule.set_defaults(func=_cmd_rule)

    rules = sub.add_parser("rules", help="list every rule")
    rules.add_argument("--output-format", choices=("text", "json", "markdown"), default="text")
    rules.set_defaults(func=_cmd_rules)

    for optional in ("warp_harness.daemon.cli", "warp_harness.daemon.client_cli", "warp_harness.server.cli"):
        try:
            module = __import__(optional, fromlist=["add_subcommands"])
        except ImportError:
            continue
        add = getattr(module, "add_subcommands", None)
        if add is not None:
            add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
