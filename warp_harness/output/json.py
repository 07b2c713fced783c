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

Text is valid Unicode: a file name that is not valid UTF-8 (held by Python as surrogate
escapes) shows each undecodable byte as ``\\xNN`` (``printable``), as SARIF's messages do
(SARIF's URIs percent-encode the raw bytes instead).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .model import FileResult, RuleInfo, all_records, count, jsonable

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte of a file name (os.fsdecode)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every lone surrogate written out: ``k\\udcff.py`` (the file name
    ``b"k\\xff.py"``) becomes ``k\\xff.py`` (a backslash and three characters). Text that is
    valid Unicode comes back unchanged."""
    if text.isascii():
        return text
    return _SURROGATE.sub(_escape_surrogate, text)


def printable_tree(obj: Any) -> Any:
    """``obj`` (JSON-ready: dicts, lists, strings, numbers) with ``printable`` on every string."""
    if isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, dict):
        return {printable_tree(k): printable_tree(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [printable_tree(v) for v in obj]
    return obj


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
        "results": printable_tree(record_entries(results, rules)),
        "summary": {"files": len(results), **count(all_records(results)).to_dict()},
    }
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
