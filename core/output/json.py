"""Machine-readable output for agents and scripts.

One JSON object::

    {"version": "0.1.0",
     "results": [{"path": "k.py", "stage": "constraint", "rule": "WH007", ...}, ...],
     "summary": {"files": 3, "errors": 1, "warnings": 0, "infos": 0, "hints": 0,
                 "fixable": 1, "unsafe_fixable": 0}}

Each entry of ``results`` is exactly ``Record.to_dict()`` plus ``path`` (the file it was
found in) and ``url`` (the rule's documentation, null for ad-hoc ids such as
``compile-error``), so ``Record.from_dict(entry)`` gives the record back. Values are
strict JSON: non-finite floats in ``expected``/``actual`` become ``"nan"``/``"inf"``.
Keys keep a fixed order; the output is byte-for-byte stable for the same input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .model import FileResult, RuleInfo, all_records, count, jsonable


def record_entries(results: Sequence[FileResult], rules: Mapping[str, RuleInfo]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    for result in results:
        for record in result.records:
            entry: dict[str, Any] = {"path": result.path}
            entry.update(jsonable(record.to_dict()))
            info = rules.get(record.rule)
            entry["url"] = info.url if info is not None and info.url else None
            entries.append(entry)
    return entries


def render_json(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del color
    document = {
        "version": tool_version,
        "results": record_entries(results, rules),
        "summary": {"files": len(results), **count(all_records(results)).to_dict()},
    }
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
