from __future__ import annotations

import json
from typing import Any

from output_samples import COMPILE, DOC_URL, make_results

from warp_harness.output import render
from warp_harness.output.json import render_json
from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.record import Location, Record, Severity, Stage


def _strict_loads(text: str) -> Any:
    def reject(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=reject)


def _doc(results: list[FileResult], rules: dict[str, RuleInfo]) -> dict[str, Any]:
    doc = _strict_loads(render_json(results, rules=rules, tool_version="1.2.3"))
    assert isinstance(doc, dict)
    return doc


def test_document_shape(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    doc = _doc(results, rules)
    assert list(doc) == ["version", "results", "summary"]
    assert doc["version"] == "1.2.3"
    assert [entry["path"] for entry in doc["results"]] == ["k.py"] * 4 + ["perf.py"]
    assert [entry["rule"] for entry in doc["results"]] == [
        "WH007",
        "WH003",
        "compile-error",
        "WH010",
        "performance-target",
    ]
    assert doc["summary"] == {
        "files": 3,
        "errors": 2,
        "warnings": 2,
        "infos": 1,
        "hints": 0,
        "fixable": 1,
        "unsafe_fixable": 1,
    }


def test_each_entry_is_record_to_dict_plus_path_and_url(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    entries = _doc(results, rules)["results"]
    records = [record for result in results for record in result.records]
    for entry, record in zip(entries, records, strict=True):
        extra = {key: entry[key] for key in ("path", "url")}
        rest = {key: value for key, value in entry.items() if key not in extra}
        assert rest == json.loads(json.dumps(record.to_dict()))
    assert entries[0]["url"] == DOC_URL + "wh007"
    assert entries[2]["url"] is None  # compile-error is not a registry rule
    assert entries[3]["url"] is None  # WH010 has no documentation link


def test_round_trip_to_records(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    entries = _doc(results, rules)["results"]
    records = [record for result in results for record in result.records]
    back = [Record.from_dict(entry) for entry in entries]
    assert [r.to_dict() for r in back] == [r.to_dict() for r in records]
    # records with explicit end positions come back identical, fix and related included
    assert back[0] == records[0]
    assert back[1] == records[1]
    assert back[0].fix is not None and back[0].fix.edits[0].new_text == "32"
    assert back[0].related[0].location.path == "launch.py"
    # a location without an end comes back with the end at its start
    assert back[2].location == Location(COMPILE.location.path, 5, 0, 5, 0)


def test_non_finite_and_numpy_like_values_are_strict_json(rules: dict[str, RuleInfo]) -> None:
    class FakeScalar:
        def tolist(self) -> float:
            return 2.5

    record = Record(
        Stage.NUMERIC,
        "numeric-mismatch",
        Severity.ERROR,
        Location("n.py", 7, 2, 7, 9),
        "3 of 1024 outputs differ; first at index (0, 5)",
        expected={"max_rel_error": 1e-4, "index": (0, 5), "scale": FakeScalar()},
        actual=[float("nan"), float("inf"), float("-inf"), 1.5],
    )
    doc = _doc([FileResult("n.py", (record,))], rules)
    entry = doc["results"][0]
    assert entry["expected"] == {"max_rel_error": 1e-4, "index": [0, 5], "scale": 2.5}
    assert entry["actual"] == ["nan", "inf", "-inf", 1.5]
    assert Record.from_dict(entry).message == record.message


def test_empty_and_stable(rules: dict[str, RuleInfo]) -> None:
    doc = _doc([FileResult("ok.py", ())], rules)
    assert doc["results"] == []
    assert doc["summary"]["files"] == 1
    first = render("json", make_results(), rules=rules, tool_version="0.1.0")
    second = render("json", make_results(), rules=rules, tool_version="0.1.0")
    assert first == second
    assert first.endswith("}\n")
