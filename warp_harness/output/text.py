"""Terminal output, in the manner of ruff::

    k.py:12:5: WH007 [error] tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block
       |
    12 |     TILE_K = 64
       |     ^^^^^^^^^^^
      hint: lower TILE_K from 64 to 32
      expected: 49152 actual: 98304
      fix available: Set TILE_K = 32

    Found 1 error, 0 warnings (1 fixable with --fix)

Columns in the header are 1-based (as editors and terminals expect); record columns are
0-based. The underline is measured in terminal cells: tabs expand to the next multiple of
8 and East-Asian wide characters take two cells.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

from ..record import Record, Severity
from .model import FileResult, RuleInfo, all_records, count, end_of, format_value, position

TAB_SIZE = 8

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_CYAN = "\x1b[36m"
_SEVERITY_COLOR: dict[Severity, str] = {
    Severity.ERROR: "\x1b[1;31m",
    Severity.WARNING: "\x1b[1;33m",
    Severity.INFO: "\x1b[1;34m",
    Severity.HINT: "\x1b[1;36m",
}


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and text else text


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _expand(text: str) -> tuple[str, list[int]]:
    """Expand tabs; return the displayed text and the display cell where each character of
    ``text`` starts (plus one entry for the end of the text)."""
    out: list[str] = []
    starts: list[int] = []
    cell = 0
    for ch in text:
        starts.append(cell)
        if ch == "\t":
            width = TAB_SIZE - cell % TAB_SIZE
            out.append(" " * width)
        else:
            width = _char_width(ch)
            out.append(ch)
        cell += width
    starts.append(cell)
    return "".join(out), starts


def underline(line_text: str, col: int, end_col: int | None) -> tuple[str, str]:
    """The displayed source line and the caret line under ``[col, end_col)``.

    ``end_col`` None means "to the end of the line" (a range that continues on later
    lines). A zero-width range, or one that starts past the end of the line, gets a
    single caret.
    """
    shown, starts = _expand(line_text)
    n = len(line_text)
    start = min(max(col, 0), n)
    stop = n if end_col is None else min(max(end_col, start), n)
    first = starts[start]
    width = starts[stop] - first
    return shown, " " * first + "^" * max(width, 1)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _record_lines(result: FileResult, record: Record, style: _Style) -> list[str]:
    loc = record.location
    line = max(loc.line, 1)
    col = max(loc.col, 0)
    sev_color = _SEVERITY_COLOR[record.severity]
    message_lines = record.message.splitlines() or [""]
    header = (
        f"{style(_BOLD, result.path)}:{position(loc)}: "
        f"{style(sev_color, record.rule)} [{style(sev_color, record.severity.value)}] {message_lines[0]}"
    )
    lines = [header]
    lines.extend(f"    {extra}" for extra in message_lines[1:])

    text = result.line_text(line, loc.cell)
    if text is not None:
        end_line, end_col = end_of(record)
        shown, carets = underline(text, col, end_col if end_line == line else None)
        gutter = " " * len(str(line))
        lines.append(style(_CYAN, f"{gutter} |"))
        lines.append(f"{style(_CYAN, f'{line} |')} {shown}".rstrip())
        lines.append(f"{style(_CYAN, f'{gutter} |')} {style(sev_color, carets)}")

    if record.hint:
        hint_lines = record.hint.splitlines() or [""]
        lines.append(f"  {style(_CYAN, 'hint:')} {hint_lines[0]}")
        lines.extend(f"        {extra}" for extra in hint_lines[1:])
    parts = []
    if record.expected is not None:
        parts.append(f"expected: {format_value(record.expected)}")
    if record.actual is not None:
        parts.append(f"actual: {format_value(record.actual)}")
    if parts:
        lines.append("  " + " ".join(parts))
    for related in record.related:
        rloc = related.location
        lines.append(f"  related: {rloc.path}:{position(rloc)}: {related.message}")
    if record.fix is not None and record.fix.edits:
        suffix = "" if record.fix.safe else " (unsafe)"
        lines.append(f"  fix available{suffix}: {record.fix.title}")
    return lines


def summary(results: Sequence[FileResult]) -> str:
    counts = count(all_records(results))
    if counts.total == 0:
        return "All checks passed!"
    text = f"Found {_plural(counts.errors, 'error')}, {_plural(counts.warnings, 'warning')}"
    notes = counts.infos + counts.hints
    if notes:
        text += f", {_plural(notes, 'note')}"
    if counts.fixable:
        text += f" ({counts.fixable} fixable with --fix)"
    return text


def render_text(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    """Every record of every file, in the order given, then a one-line summary."""
    del rules, tool_version  # text output shows neither
    blocks = _record_blocks(results, color)
    blocks.append(_Style(color)(_BOLD, summary(results)) + "\n")
    return "\n".join(blocks)


def render_text_quiet(results: Sequence[FileResult], *, color: bool = False) -> str:
    """`render_text` without the summary (``check --quiet``): the records alone, nothing when none."""
    return "\n".join(_record_blocks(results, color))


def _record_blocks(results: Sequence[FileResult], color: bool) -> list[str]:
    style = _Style(color)
    return [
        "\n".join(_record_lines(result, record, style)) + "\n"
        for result in results
        for record in result.records
    ]
