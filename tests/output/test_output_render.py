from __future__ import annotations

import pytest

import warp_harness.output as output
from warp_harness.output import FORMATS, render
from warp_harness.output.model import FileResult, RuleInfo, count, jsonable, rule_title


def test_formats() -> None:
    assert FORMATS == (
        "text",
        "concise",
        "grouped",
        "json",
        "json-lines",
        "sarif",
        "github",
        "gitlab",
        "junit",
        "pylint",
        "rdjson",
    )
    assert set(output.__all__) >= {"FORMATS", "FileResult", "RuleInfo", "render"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_everything(
    fmt: str, results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    out = render(fmt, results, rules=rules, tool_version="0.1.0")
    assert out.endswith("\n")
    assert render(fmt, results, rules=rules, tool_version="0.1.0") == out  # deterministic
    if fmt != "text":  # color only changes the terminal output
        assert render(fmt, results, rules=rules, tool_version="0.1.0", color=True) == out


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_nothing(fmt: str, rules: dict[str, RuleInfo]) -> None:
    out = render(fmt, [], rules={}, tool_version="0.1.0")
    assert isinstance(out, str)


def test_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render("xml", [], rules={}, tool_version="0.1.0")


def test_counts(results: list[FileResult]) -> None:
    counts = count(record for result in results for record in result.records)
    assert (counts.errors, counts.warnings, counts.infos, counts.hints) == (2, 2, 1, 0)
    assert (counts.fixable, counts.unsafe_fixable, counts.total) == (1, 1, 5)


def test_jsonable_and_rule_title() -> None:
    assert jsonable({"a": (1, float("nan")), 2: {3, 1}}) == {"a": [1, "nan"], "2": [1, 3]}
    assert jsonable(object.__new__(type("Opaque", (), {"__str__": lambda self: "opaque"}))) == "opaque"
    assert rule_title("compile-error") == "CompileError"
    assert rule_title("internal_error") == "InternalError"
    assert rule_title("WH003") == "WH003"
