"""One line per record, as Ruff's ``concise`` format: ``k.py:4:10: WH003 [*] message``.

``[*]`` marks a record with a safe fix (``--fix`` applies it). Columns are 1-based. No source
excerpt, hint or summary: for grepping, editors' quickfix lists and small terminals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .json import printable
from .model import FileResult, RuleInfo, position


def one_line(text: str) -> str:
    """``text`` on one line (a codegen message spans several): line breaks become spaces."""
    return " ".join(printable(text).splitlines())


def render_concise(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del rules, tool_version, color
    lines = []
    for result in results:
        for record in result.records:
            loc = record.location
            mark = " [*]" if record.fix is not None and record.fix.edits and record.fix.safe else ""
            lines.append(
                f"{printable(result.path)}:{position(loc)}: {record.rule}{mark} {one_line(record.message)}"
            )
    return "".join(line + "\n" for line in lines)
