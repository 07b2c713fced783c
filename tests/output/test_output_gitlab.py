"""GitLab code quality report: Code Climate's fields, stable fingerprints."""

from __future__ import annotations

import json
from dataclasses import replace

from warp_harness.output import render
from warp_harness.output.model import FileResult, RuleInfo


def _gitlab(results: list[FileResult], rules: dict[str, RuleInfo]) -> list[dict[str, object]]:
    issues: list[dict[str, object]] = json.loads(render("gitlab", results, rules=rules, tool_version="0.1.0"))
    return issues


def test_one_issue_per_record_with_code_climate_fields(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    issues = _gitlab(results, rules)
    assert len(issues) == sum(len(r.records) for r in results)
    assert issues[0] == {
        "check_name": "WH007",
        "description": "WH007: tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block",
        "severity": "major",
        "fingerprint": issues[0]["fingerprint"],
        "location": {"path": "k.py", "lines": {"begin": 2, "end": 2}},
    }
    assert [i["severity"] for i in issues] == ["major", "minor", "major", "info", "minor"]
    fingerprints = [i["fingerprint"] for i in issues]
    assert len(set(fingerprints)) == len(fingerprints)


def test_fingerprints_survive_a_line_shift_and_tell_duplicates_apart(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    first = results[0]
    record = first.records[0]
    lines = first.source_lines or ()
    shifted_record = replace(record, location=replace(record.location, line=record.location.line + 1))
    shifted = FileResult(first.path, (shifted_record,), ("# a new first line", *lines))
    before = _gitlab([FileResult(first.path, (record,), lines)], rules)[0]
    after = _gitlab([shifted], rules)[0]
    assert before["fingerprint"] == after["fingerprint"]
    assert after["location"] == {"path": "k.py", "lines": {"begin": 3, "end": 3}}
    twice = _gitlab([FileResult(first.path, (record, record), lines)], rules)
    assert twice[0]["fingerprint"] != twice[1]["fingerprint"]
