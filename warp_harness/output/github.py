"""GitHub Actions workflow commands: one annotation per record::

    ::error file=k.py,line=12,col=5,endLine=12,endColumn=16,title=WH007::tiles need ...%0Ahint: ...

Levels: error -> ``error``, warning -> ``warning``, info and hint -> ``notice``. Columns are
1-based with an exclusive end, as in ruff's GitHub output; a record without an end gets
none (GitHub then marks the whole line) and an empty range gets no ``endColumn``. Escaping follows
``@actions/core``: in the message ``%``, ``\\r``, ``\\n``; in property values also ``:`` and
``,``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..record import Record, Severity
from .model import FileResult, RuleInfo, end_of, format_value

_COMMANDS: dict[Severity, str] = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "notice",
    Severity.HINT: "notice",
}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _message(record: Record) -> str:
    lines = [record.message]
    if record.hint:
        lines.append(f"hint: {record.hint}")
    parts = []
    if record.expected is not None:
        parts.append(f"expected: {format_value(record.expected)}")
    if record.actual is not None:
        parts.append(f"actual: {format_value(record.actual)}")
    if parts:
        lines.append(" ".join(parts))
    if record.fix is not None and record.fix.edits:
        suffix = "" if record.fix.safe else " (unsafe)"
        lines.append(f"fix available{suffix}: {record.fix.title}")
    return "\n".join(lines)


def annotation(path: str, record: Record) -> str:
    loc = record.location
    line = max(loc.line, 1)
    col = max(loc.col, 0)
    end_line, end_col = end_of(record)
    props = [("file", path.replace("\\", "/")), ("line", str(line)), ("col", str(col + 1))]
    if loc.end_line is not None or loc.end_col is not None:
        props.append(("endLine", str(end_line)))
        if (end_line, end_col) != (line, col):  # an empty range would hide the annotation
            props.append(("endColumn", str(end_col + 1)))
    # a notebook's line counts in its cell: the title names the cell
    props.append(("title", record.rule if loc.cell is None else f"{record.rule} (cell {loc.cell})"))
    prop_text = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{_COMMANDS[record.severity]} {prop_text}::{escape_data(_message(record))}"


def render_github(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del rules, tool_version, color
    lines = [annotation(result.path, record) for result in results for record in result.records]
    return "".join(line + "\n" for line in lines)
