from __future__ import annotations

import re

import pytest
from output_samples import ANNOTATION, KERNEL_SOURCE, SHARED_MEMORY

from warp_harness.output import render
from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.output.text import render_text, summary, underline
from warp_harness.record import Location, Record, Severity, Stage


def _text(results: list[FileResult], rules: dict[str, RuleInfo], color: bool = False) -> str:
    return render_text(results, rules=rules, tool_version="0.1.0", color=color)


def _excerpt(output: str, header: str) -> tuple[str, str]:
    """The source line and caret line after ``header``, with their ``N |`` gutters removed."""
    lines = output.splitlines()
    i = lines.index(header)
    source, carets = lines[i + 2], lines[i + 3]
    cut = source.index("| ") + 2
    assert carets[: cut - 1].strip() == "|"
    return source[cut:], carets[cut:]


def test_header_is_path_line_col_rule_severity_message(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    out = _text(results, rules)
    lines = out.splitlines()
    assert lines[0] == (
        "k.py:2:1: WH007 [error] tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
    )
    assert "k.py:4:10: WH003 [warning] parameter 'a' has no dtype" in lines
    assert (
        "perf.py:3:1: performance-target [warning] bandwidth utilisation 42% is below the target 80%" in lines
    )
    assert "\x1b" not in out


def test_source_line_and_caret_underline(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    out = _text(results, rules)
    lines = out.splitlines()
    assert lines[1:4] == ["  |", "2 | TILE_K = 64", "  | ^^^^^^"]

    source, carets = _excerpt(out, "k.py:4:10: WH003 [warning] parameter 'a' has no dtype")
    assert source == KERNEL_SOURCE[3]
    start = carets.index("^")
    assert start == ANNOTATION.location.col
    assert carets[start:] == "^" * (35 - 9)
    assert source[start : start + len(carets) - start] == "a: wp.array2d(dtype=float)"


def test_hint_expected_actual_related_and_fix_lines(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    lines = _text(results, rules).splitlines()
    block = lines[: lines.index("")]
    assert block[4:] == [
        "  hint: lower TILE_K from 64 to 32",
        "  expected: 49152 actual: 98304",
        "  related: launch.py:10:5: launched here with block_dim=256",
        "  fix available: Set TILE_K = 32",
    ]
    assert "  fix available (unsafe): Use int(n)" in lines
    assert "  expected: 0.8 actual: 0.42" in lines


def test_multiline_message_is_indented_and_zero_width_gets_one_caret(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    lines = _text(results, rules).splitlines()
    i = lines.index("k.py:5:1: compile-error [error] Warp codegen failed:")
    assert lines[i + 1] == "    Couldn't find function overload for 'add'"
    # the offending line starts with a tab: shown expanded, one caret under its first cell
    assert lines[i + 3] == "5 |         x = a[0, 0]"
    assert lines[i + 4] == "  | ^"


def test_summary_counts_and_fixable(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    out = _text(results, rules)
    # the unsafe fix of the info record is not counted as fixable with --fix
    assert out.endswith("Found 2 errors, 2 warnings, 1 note (1 fixable with --fix)\n")
    assert summary([FileResult("a.py", (ANNOTATION,))]) == "Found 0 errors, 1 warning"
    assert (
        summary([FileResult("a.py", (SHARED_MEMORY,))]) == "Found 1 error, 0 warnings (1 fixable with --fix)"
    )


def test_all_checks_passed(rules: dict[str, RuleInfo]) -> None:
    assert _text([FileResult("ok.py", ())], rules) == "All checks passed!\n"
    assert _text([], rules) == "All checks passed!\n"


def test_no_source_lines_means_no_excerpt(rules: dict[str, RuleInfo]) -> None:
    out = _text([FileResult("k.py", (ANNOTATION,))], rules)
    assert out.splitlines()[:2] == [
        "k.py:4:10: WH003 [warning] parameter 'a' has no dtype",
        "  hint: write wp.array2d(dtype=wp.float32)",
    ]
    assert "|" not in out


def test_line_outside_the_source_is_not_shown(rules: dict[str, RuleInfo]) -> None:
    record = Record(Stage.INTERNAL, "internal-error", Severity.ERROR, Location("k.py", 99, 3), "boom")
    out = _text([FileResult("k.py", (record,), KERNEL_SOURCE)], rules)
    assert out.splitlines()[0] == "k.py:99:4: internal-error [error] boom"
    assert "|" not in out


@pytest.mark.parametrize(
    ("line", "col", "end_col", "shown", "carets"),
    [
        ("abc = 1", 0, 3, "abc = 1", "^^^"),
        ("abc = 1", 6, 6, "abc = 1", "      ^"),  # zero width: one caret
        ("abc = 1", 4, None, "abc = 1", "    ^^^"),  # continues on the next line: to the end
        ("abc", 10, 12, "abc", "   ^"),  # past the end of the line
        ("\tx = 1", 1, 2, "        x = 1", "        ^"),  # tab expands to 8 cells
        ("a\tb", 2, 3, "a       b", "        ^"),  # tab after one cell expands to 7
        ("s = '数据'", 5, 7, "s = '数据'", "     ^^^^"),  # wide characters take two cells
        ("s = '数据' + x", 11, 12, "s = '数据' + x", "             ^"),
    ],
)
def test_underline_positions(line: str, col: int, end_col: int | None, shown: str, carets: str) -> None:
    assert underline(line, col, end_col) == (shown, carets)


def test_multiline_range_underlines_to_end_of_first_line(rules: dict[str, RuleInfo]) -> None:
    record = Record(
        Stage.CONSTRAINT, "WH003", Severity.WARNING, Location("k.py", 4, 4, 5, 3), "spans two lines"
    )
    lines = _text([FileResult("k.py", (record,), KERNEL_SOURCE)], rules).splitlines()
    assert lines[3] == "  |     " + "^" * (len(KERNEL_SOURCE[3]) - 4)


def test_color_uses_ansi_and_keeps_the_text(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    plain = _text(results, rules)
    colored = _text(results, rules, color=True)
    assert "\x1b[1;31m" in colored  # errors in red
    assert "\x1b[1;33m" in colored  # warnings in yellow

    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


def test_render_dispatches_to_text(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    assert render("text", results, rules=rules, tool_version="0.1.0") == _text(results, rules)
