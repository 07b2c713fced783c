from __future__ import annotations

import xml.etree.ElementTree as ET

from output_samples import ANNOTATION, make_results

from warp_harness.output import render
from warp_harness.output.junit import render_junit
from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.record import Location, Record, Severity, Stage


def _root(results: list[FileResult], rules: dict[str, RuleInfo]) -> ET.Element:
    text = render_junit(results, rules=rules, tool_version="0.1.0")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    return ET.fromstring(text)


def test_suite_and_counts(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    root = _root(results, rules)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    assert suite.get("name") == "warp-harness"
    # k.py: three failing records (one testcase each), ok.py: one passing testcase, perf.py: one failing
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        "5",
        "4",
        "0",
        "0",
    )
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "4", "0")
    cases = suite.findall("testcase")
    assert [case.get("classname") for case in cases] == ["k.py", "k.py", "k.py", "ok.py", "perf.py"]
    assert cases[3].get("name") == "ok.py"
    # at most one <failure> per testcase, and the counts agree with the elements
    assert all(len(case.findall("failure")) <= 1 for case in cases)
    failed = [case for case in cases if case.find("failure") is not None]
    assert len(failed) == int(suite.get("failures", "-1"))
    assert len(root.findall(".//failure")) == int(root.get("failures", "-1"))


def test_one_failure_per_error_or_warning(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    all_cases = list(_root(results, rules).iter("testcase"))
    cases = {case.get("classname"): case for case in reversed(all_cases)}  # each file's first testcase
    k_cases = [case for case in all_cases if case.get("classname") == "k.py"]
    k_failures = [f for case in k_cases for f in case.findall("failure")]
    assert [len(case.findall("failure")) for case in k_cases] == [1, 1, 1]
    assert k_cases[0].get("name") == "k.py:2:1 WH007" and k_cases[0].get("line") == "2"
    # WH007 (error), WH003 (warning), compile-error (error); the WH010 info does not fail
    assert [f.get("type") for f in k_failures] == ["WH007", "WH003", "compile-error"]
    first = k_failures[0]
    assert first.get("message") == "tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
    body = (first.text or "").splitlines()
    assert body[0] == (
        "k.py:2:1: WH007 [error] (constraint) "
        "tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
    )
    assert "hint: lower TILE_K from 64 to 32" in body
    assert "expected: 49152" in body and "actual: 98304" in body
    assert "fix available: Set TILE_K = 32" in body
    out = cases["k.py"].find("system-out")
    assert out is not None and "WH010 [info]" in (out.text or "")
    assert list(cases["ok.py"]) == []
    perf = cases["perf.py"].findall("failure")
    assert [f.get("type") for f in perf] == ["performance-target"]
    assert "(performance)" in (perf[0].text or "")


def test_info_only_file_passes(rules: dict[str, RuleInfo]) -> None:
    info = Record(Stage.CONSTRAINT, "WH010", Severity.INFO, Location("i.py", 1), "just saying")
    suite = _root([FileResult("i.py", (info,)), FileResult("w.py", (ANNOTATION,))], rules).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")


def test_special_and_control_characters_survive(rules: dict[str, RuleInfo]) -> None:
    message = 'error: <T> & "quoted"\x1b[31m red \x00 \ud800 end'
    record = Record(Stage.COMPILE, "compile-error", Severity.ERROR, Location("a&b<c>.py", 3), message)
    case = _root([FileResult("a&b<c>.py", (record,))], rules).find("testsuite/testcase")
    assert case is not None and case.get("classname") == "a&b<c>.py"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == 'error: <T> & "quoted"\ufffd[31m red \ufffd \ufffd end'


def test_empty_and_dispatch(rules: dict[str, RuleInfo]) -> None:
    root = _root([], rules)
    assert (root.get("tests"), root.get("failures")) == ("0", "0")
    assert render("junit", make_results(), rules=rules, tool_version="0.1.0") == render_junit(
        make_results(), rules=rules, tool_version="0.1.0"
    )
