from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from output_samples import ANNOTATION, DOC_URL, KERNEL_SOURCE, SHARED_MEMORY

from warp_harness.output import render
from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.output.sarif import artifact_location, region, render_sarif
from warp_harness.record import Location, Record, Related, Severity, Stage

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> Any:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _log(results: list[FileResult], rules: dict[str, RuleInfo], validator: Any, **kw: Any) -> dict[str, Any]:
    text = render_sarif(results, rules=rules, tool_version="0.1.0", **kw)
    log = json.loads(text)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    assert isinstance(log, dict)
    return log


def test_schema_rejects_a_broken_log(validator: Any) -> None:
    # the bundled schema really constrains: a result without a message is invalid
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "a"}]}]}
    assert list(validator.iter_errors(bad))


def test_valid_and_complete_driver(
    results: list[FileResult], rules: dict[str, RuleInfo], validator: Any
) -> None:
    log = _log(results, rules, validator)
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert len(log["runs"]) == 1
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "warp-harness"
    assert driver["version"] == "0.1.0"
    assert driver["semanticVersion"] == "0.1.0"
    # the installed rules documentation, never a made-up site
    assert driver["informationUri"].startswith("file://") and driver["informationUri"].endswith(
        "/docs/rules.md"
    )
    ids = [rule["id"] for rule in driver["rules"]]
    # registry rules sorted, then ad-hoc ids of non-constraint stages in order of appearance
    assert ids == ["WH001", "WH003", "WH007", "WH010", "compile-error", "performance-target"]
    wh003 = driver["rules"][1]
    assert wh003["name"] == "array-annotation"
    assert wh003["shortDescription"]["text"] == "Kernel array parameters need a dtype"
    assert wh003["fullDescription"]["text"].startswith("Why: Warp needs")
    assert wh003["helpUri"] == DOC_URL + "wh003"
    assert "Good: `a: wp.array(dtype=float)`" in wh003["help"]["text"]
    assert DOC_URL + "wh003" in wh003["help"]["markdown"]
    assert wh003["defaultConfiguration"]["level"] == "warning"
    assert driver["rules"][3]["defaultConfiguration"]["level"] == "note"  # WH010 is info
    assert "helpUri" not in driver["rules"][3]  # no url given
    compile_rule = driver["rules"][4]
    assert compile_rule["name"] == "CompileError"
    assert compile_rule["defaultConfiguration"]["level"] == "error"


def test_results_rule_index_level_and_message(
    results: list[FileResult], rules: dict[str, RuleInfo], validator: Any
) -> None:
    run = _log(results, rules, validator)["runs"][0]
    driver_rules = run["tool"]["driver"]["rules"]
    sarif_results = run["results"]
    assert len(sarif_results) == 5
    for item in sarif_results:
        assert driver_rules[item["ruleIndex"]]["id"] == item["ruleId"]
    assert [item["level"] for item in sarif_results] == ["error", "warning", "error", "note", "warning"]
    first = sarif_results[0]
    assert first["message"]["text"] == (
        "tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block\nhint: lower TILE_K from 64 to 32"
    )
    assert first["properties"]["stage"] == "constraint"
    assert first["properties"]["expected"] == 49152
    assert first["properties"]["actual"] == 98304
    assert first["locations"][0]["logicalLocations"] == [{"name": "gemm", "kind": "function"}]
    assert sarif_results[4]["properties"]["stage"] == "performance"


def test_regions_are_one_based_with_exclusive_end(
    results: list[FileResult], rules: dict[str, RuleInfo], validator: Any
) -> None:
    sarif_results = _log(results, rules, validator)["runs"][0]["results"]
    loc = sarif_results[1]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "k.py", "uriBaseId": "%SRCROOT%"}
    reg = loc["region"]
    assert (reg["startLine"], reg["startColumn"], reg["endLine"], reg["endColumn"]) == (4, 10, 4, 36)
    # the 1-based exclusive columns select exactly the 0-based record span
    line = KERNEL_SOURCE[3]
    assert line[reg["startColumn"] - 1 : reg["endColumn"] - 1] == "a: wp.array2d(dtype=float)"
    assert reg["snippet"]["text"] == line
    # no end in the record: start only (the whole line in viewers)
    assert sarif_results[2]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 5,
        "startColumn": 1,
        "snippet": {"text": KERNEL_SOURCE[4]},
    }
    assert region(0, -3, None, None) == {"startLine": 1, "startColumn": 1}
    assert region(3, 5, 2, 0) == {"startLine": 3, "startColumn": 6, "endLine": 3, "endColumn": 6}


def test_fixes_and_related_locations(
    results: list[FileResult], rules: dict[str, RuleInfo], validator: Any
) -> None:
    sarif_results = _log(results, rules, validator)["runs"][0]["results"]
    first = sarif_results[0]
    assert first["fixes"] == [
        {
            "description": {"text": "Set TILE_K = 32"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": "k.py", "uriBaseId": "%SRCROOT%"},
                    "replacements": [
                        {
                            "deletedRegion": {
                                "startLine": 2,
                                "startColumn": 10,
                                "endLine": 2,
                                "endColumn": 12,
                            },
                            "insertedContent": {"text": "32"},
                        }
                    ],
                }
            ],
        }
    ]
    assert KERNEL_SOURCE[1][10 - 1 : 12 - 1] == "64"
    assert first["relatedLocations"] == [
        {
            "id": 1,
            "physicalLocation": {
                "artifactLocation": {"uri": "launch.py", "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": 10, "startColumn": 5, "endLine": 10, "endColumn": 31},
            },
            "message": {"text": "launched here with block_dim=256"},
        }
    ]
    assert "fixes" not in sarif_results[1]
    assert "relatedLocations" not in sarif_results[1]


def test_fingerprints_stable_when_lines_move(rules: dict[str, RuleInfo], validator: Any) -> None:
    def fingerprints(results: list[FileResult]) -> list[str]:
        log = _log(results, rules, validator)
        return [item["partialFingerprints"]["primaryLocationLineHash"] for item in log["runs"][0]["results"]]

    before = fingerprints([FileResult("k.py", (SHARED_MEMORY, ANNOTATION), KERNEL_SOURCE)])
    shifted_lines = ("# a new comment line", *KERNEL_SOURCE)

    def shift(record: Record) -> Record:
        loc = record.location
        assert loc.end_line is not None
        return replace(record, location=replace(loc, line=loc.line + 1, end_line=loc.end_line + 1))

    after = fingerprints([FileResult("k.py", (shift(SHARED_MEMORY), shift(ANNOTATION)), shifted_lines)])
    assert before == after
    assert len(set(before)) == 2
    assert all(fp.endswith(":1") for fp in before)
    # another file or another rule on the same line gets another fingerprint
    other = fingerprints([FileResult("other.py", (SHARED_MEMORY,), KERNEL_SOURCE)])
    assert other[0] != before[0]
    # identical findings on identical lines are told apart by the occurrence counter
    twice = fingerprints([FileResult("k.py", (SHARED_MEMORY, SHARED_MEMORY), KERNEL_SOURCE)])
    assert twice[0].split(":")[0] == twice[1].split(":")[0]
    assert (twice[0][-2:], twice[1][-2:]) == (":1", ":2")


def test_paths_become_relative_posix_uris(tmp_path: Path, rules: dict[str, RuleInfo], validator: Any) -> None:
    assert artifact_location("./src/k.py") == {"uri": "src/k.py", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("src\\k.py") == {"uri": "src/k.py", "uriBaseId": "%SRCROOT%"}
    assert artifact_location("my kernels/k#1.py") == {
        "uri": "my%20kernels/k%231.py",
        "uriBaseId": "%SRCROOT%",
    }
    inside = tmp_path / "pkg" / "k.py"
    assert artifact_location(str(inside), root=str(tmp_path)) == {"uri": "pkg/k.py", "uriBaseId": "%SRCROOT%"}
    outside = artifact_location("/opt/elsewhere/k.py", root=str(tmp_path))
    assert outside == {"uri": "file:///opt/elsewhere/k.py"}
    assert artifact_location("C:\\work\\k.py") == {"uri": "file:///C:/work/k.py"}

    record = replace(ANNOTATION, location=replace(ANNOTATION.location, path=str(inside)))
    log = _log([FileResult(str(inside), (record,))], rules, validator, root=str(tmp_path))
    art = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "pkg/k.py", "uriBaseId": "%SRCROOT%"}


def test_other_stages_and_odd_values_stay_valid(rules: dict[str, RuleInfo], validator: Any) -> None:
    severities = [Severity.ERROR, Severity.WARNING, Severity.INFO, Severity.HINT]
    records = tuple(
        Record(stage, f"{stage.value}-finding", severity, Location("x.py", 1), f"{stage.value} happened")
        for stage, severity in zip(Stage, severities * 2, strict=True)
    )
    numeric = Record(
        Stage.NUMERIC,
        "numeric-mismatch",
        Severity.ERROR,
        Location("x.py", 3, 0, 3, 4, kernel="k"),
        "outputs differ",
        expected=[1.0, 2.0],
        actual=[float("nan"), float("inf")],
        related=(Related(Location("ref.py", 1, 0), "reference"),),
    )
    log = _log([FileResult("x.py", (*records, numeric))], {}, validator)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        *(f"{stage.value}-finding" for stage in Stage),
        "numeric-mismatch",
    ]
    assert run["results"][-1]["properties"]["actual"] == ["nan", "inf"]
    assert {item["level"] for item in run["results"]} == {"error", "warning", "note"}


def test_empty_run_is_valid(rules: dict[str, RuleInfo], validator: Any) -> None:
    log = _log([], rules, validator)
    assert log["runs"][0]["results"] == []
    assert len(log["runs"][0]["tool"]["driver"]["rules"]) == 4
    assert (
        "semanticVersion"
        not in json.loads(render("sarif", [], rules=rules, tool_version="dev"))["runs"][0]["tool"]["driver"]
    )
