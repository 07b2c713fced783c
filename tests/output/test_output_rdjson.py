"""reviewdog's rdjson: 1-based ranges, rule and URL as ``code``, fixes as suggestions."""

from __future__ import annotations

import json
from typing import Any

from warp_harness.output import render
from warp_harness.output.model import FileResult, RuleInfo


def _rdjson(results: list[FileResult], rules: dict[str, RuleInfo]) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(render("rdjson", results, rules=rules, tool_version="0.1.0"))
    return document


def test_diagnostics_carry_ranges_codes_and_suggestions(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    document = _rdjson(results, rules)
    assert document["source"]["name"] == "warp-harness"
    diagnostics = document["diagnostics"]
    assert len(diagnostics) == sum(len(r.records) for r in results)
    first = diagnostics[0]
    assert first["location"] == {
        "path": "k.py",
        "range": {"start": {"line": 2, "column": 1}, "end": {"line": 2, "column": 7}},
    }
    assert first["severity"] == "ERROR"
    assert first["code"] == {"value": "WH007", "url": rules["WH007"].url}
    assert first["message"].endswith("\nhint: lower TILE_K from 64 to 32")
    # the record's fix: replace columns 9-11 (0-based) of line 2 with "32"
    assert first["suggestions"] == [
        {"range": {"start": {"line": 2, "column": 10}, "end": {"line": 2, "column": 12}}, "text": "32"}
    ]
    assert "suggestions" not in diagnostics[1]
    assert [d["severity"] for d in diagnostics] == ["ERROR", "WARNING", "ERROR", "INFO", "WARNING"]
    # an ad-hoc id has no documentation URL
    assert diagnostics[2]["code"] == {"value": "compile-error"}
