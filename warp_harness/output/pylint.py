"""Pylint's parseable format, as Ruff writes it: ``k.py:4: [WH003] message``.

For tools that read pylint output (Jenkins' warnings plugin, older editor integrations).
Lines are 1-based; pylint's format has no column. A notebook's record names its cell at the start
of the message (``nb.ipynb:4: [WH003] cell 3: message``, the line counted in the cell): readers
of this format take everything before ``:<digits>:`` as the path, so the cell cannot go there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .concise import one_line
from .json import printable
from .model import FileResult, RuleInfo


def render_pylint(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del rules, tool_version, color
    lines = [
        f"{printable(result.path)}:{max(record.location.line, 1)}: [{record.rule}] "
        f"{_cell(record.location.cell)}{one_line(record.message)}"
        for result in results
        for record in result.records
    ]
    return "".join(line + "\n" for line in lines)


def _cell(cell: int | None) -> str:
    return "" if cell is None else f"cell {cell}: "
