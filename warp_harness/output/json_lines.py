"""JSON Lines: one JSON object per record, each exactly an entry of the ``json`` format's
``results`` (``Record.to_dict()`` plus ``path`` and ``url``). No summary line: a stream an
agent or ``jq`` can read record by record."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from .json import printable_tree, record_entries
from .model import FileResult, RuleInfo


def render_json_lines(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del tool_version, color
    return "".join(
        json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n"
        for entry in printable_tree(record_entries(results, rules))
    )
