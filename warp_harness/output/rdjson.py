"""reviewdog's Diagnostic Format (rdjson), as Ruff writes it: a ``source``, and one
diagnostic per record with a 1-based range, the rule as ``code`` (with its documentation
URL) and the record's fix edits as ``suggestions``, which reviewdog posts as suggested
changes on a pull request. Columns count Unicode code points (reviewdog's default).

A notebook's record names its cell at the start of the message (``cell 3: ...``); its range is
in that cell, and it has no suggestions: reviewdog applies a suggestion to the file's text, the
notebook's JSON, where cell coordinates would land on the wrong bytes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..record import Record, Severity
from .json import printable
from .model import FileResult, RuleInfo, end_of
from .sarif import INFORMATION_URI

_SEVERITY = {
    Severity.ERROR: "ERROR",
    Severity.WARNING: "WARNING",
    Severity.INFO: "INFO",
    Severity.HINT: "INFO",
}


def _position(line: int, col: int) -> dict[str, int]:
    return {"line": max(line, 1), "column": max(col, 0) + 1}


def _diagnostic(path: str, record: Record, rules: Mapping[str, RuleInfo]) -> dict[str, Any]:
    loc = record.location
    end_line, end_col = end_of(record)
    message = record.message if not record.hint else f"{record.message}\nhint: {record.hint}"
    if loc.cell is not None:
        message = f"cell {loc.cell}: {message}"
    diagnostic: dict[str, Any] = {
        "message": printable(message),
        "location": {
            "path": printable(path),
            "range": {"start": _position(loc.line, loc.col), "end": _position(end_line, end_col)},
        },
        "severity": _SEVERITY[record.severity],
        "code": {"value": record.rule},
    }
    info = rules.get(record.rule)
    if info is not None and info.url:
        diagnostic["code"]["url"] = info.url
    if record.fix is not None and record.fix.edits and loc.cell is None:
        diagnostic["suggestions"] = [
            {
                "range": {
                    "start": _position(edit.line, edit.col),
                    "end": _position(edit.end_line, edit.end_col),
                },
                "text": edit.new_text,
            }
            for edit in record.fix.edits
        ]
    return diagnostic


def render_rdjson(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del tool_version, color
    document = {
        "source": {"name": "warp-harness", "url": INFORMATION_URI},
        "severity": "WARNING",
        "diagnostics": [
            _diagnostic(result.path, record, rules) for result in results for record in result.records
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
