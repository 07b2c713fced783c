"""Records grouped by file, as Ruff's ``grouped`` format: the file's name on a line of its own, then one
indented line per record (``  4:10 WH003 [*] message``, the positions aligned), a blank line between files.

``[*]`` marks a record with a safe fix (``--fix`` applies it). Columns are 1-based. No source excerpt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .concise import one_line
from .json import printable
from .model import FileResult, RuleInfo, position


def render_grouped(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del rules, tool_version, color
    blocks = []
    for result in results:
        if not result.records:
            continue
        places = [position(record.location) for record in result.records]
        width = max(len(p) for p in places)
        lines = [f"{printable(result.path)}:"]
        for record, place in zip(result.records, places, strict=True):
            mark = " [*]" if record.fix is not None and record.fix.edits and record.fix.safe else ""
            lines.append(f"  {place.ljust(width)} {record.rule}{mark} {one_line(record.message)}")
        blocks.append("".join(line + "\n" for line in lines))
    return "\n".join(blocks)
