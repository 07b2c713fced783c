"""The line-oriented formats: ``concise`` (Ruff's), ``pylint`` and ``json-lines``."""

from __future__ import annotations

import json

from warp_harness.output import FORMATS, render
from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.record import Record


def _render(format: str, results: list[FileResult], rules: dict[str, RuleInfo]) -> str:
    return render(format, results, rules=rules, tool_version="0.1.0")


def test_every_format_is_listed_and_renders(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    for format in ("concise", "grouped", "json-lines", "gitlab", "pylint", "rdjson"):
        assert format in FORMATS
        assert _render(format, results, rules).endswith("\n")


def test_concise_is_one_line_per_record_with_safe_fixes_marked(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    lines = _render("concise", results, rules).splitlines()
    assert len(lines) == sum(len(r.records) for r in results)
    assert lines[0] == "k.py:2:1: WH007 [*] tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
    assert lines[1] == "k.py:4:10: WH003 parameter 'a' has no dtype"
    # a two-line codegen message stays on its record's line
    assert (
        lines[2] == "k.py:5:1: compile-error Warp codegen failed: Couldn't find function overload for 'add'"
    )


def test_grouped_lists_each_files_records_under_its_name(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    text = _render("grouped", results, rules)
    blocks = text.split("\n\n")
    assert len(blocks) == sum(1 for r in results if r.records)
    first = blocks[0].splitlines()
    assert first[0] == "k.py:"
    assert first[1] == "  2:1  WH007 [*] tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
    assert first[2] == "  4:10 WH003 parameter 'a' has no dtype"  # positions aligned
    assert len(first) == 1 + len(results[0].records)


def test_pylint_has_path_line_and_rule_in_brackets(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    lines = _render("pylint", results, rules).splitlines()
    assert lines[0] == "k.py:2: [WH007] tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
    assert lines[-1].startswith("perf.py:3: [performance-target] ")


def test_json_lines_are_the_json_formats_entries(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    lines = _render("json-lines", results, rules).splitlines()
    entries = json.loads(_render("json", results, rules))["results"]
    assert [json.loads(line) for line in lines] == entries
    first = json.loads(lines[0])
    assert Record.from_dict(first) == results[0].records[0]


def test_a_file_name_that_is_not_utf8_stays_printable(
    rules: dict[str, RuleInfo], results: list[FileResult]
) -> None:
    odd = [FileResult("k\udcff.py", results[0].records)]
    for format in ("concise", "pylint", "json-lines"):
        text = _render(format, odd, rules)
        text.encode("utf-8")  # raises on a lone surrogate
        shown = json.loads(text.splitlines()[0])["path"] if format == "json-lines" else text
        assert "k\\xff.py" in shown
