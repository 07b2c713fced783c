from __future__ import annotations

import re

from output_samples import make_results

from warp_harness.output import render
from warp_harness.output.github import escape_data, escape_property, render_github
from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.record import Location, Record, Severity, Stage

COMMAND = re.compile(r"^::(?P<level>error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")


def _unescape(text: str) -> str:
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def _parse(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.match(line)
    assert match, line
    props = dict(item.split("=", 1) for item in match["props"].split(","))
    return match["level"], {k: _unescape(v) for k, v in props.items()}, _unescape(match["message"])


def _github(results: list[FileResult], rules: dict[str, RuleInfo]) -> str:
    return render_github(results, rules=rules, tool_version="0.1.0")


def test_one_command_per_record(results: list[FileResult], rules: dict[str, RuleInfo]) -> None:
    out = _github(results, rules)
    lines = out.splitlines()
    assert out.endswith("\n")
    assert len(lines) == 5
    assert lines[0] == (
        "::error file=k.py,line=2,col=1,endLine=2,endColumn=7,title=WH007::"
        "tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block"
        "%0Ahint: lower TILE_K from 64 to 32%0Aexpected: 49152 actual: 98304%0Afix available: Set TILE_K = 32"
    )
    levels = [_parse(line)[0] for line in lines]
    assert levels == ["error", "warning", "error", "notice", "warning"]


def test_columns_are_one_based_and_missing_ends_omitted(
    results: list[FileResult], rules: dict[str, RuleInfo]
) -> None:
    lines = _github(results, rules).splitlines()
    _, props, _ = _parse(lines[1])
    assert props == {
        "file": "k.py",
        "line": "4",
        "col": "10",
        "endLine": "4",
        "endColumn": "36",
        "title": "WH003",
    }
    _, props, message = _parse(lines[2])  # compile error with no end position
    assert props == {"file": "k.py", "line": "5", "col": "1", "title": "compile-error"}
    assert message == "Warp codegen failed:\nCouldn't find function overload for 'add'"
    zero = Record(Stage.CONSTRAINT, "WH003", Severity.HINT, Location("k.py", 3, 4, 3, 4), "here")
    _, props, _ = _parse(_github([FileResult("k.py", (zero,))], rules).strip())
    assert props == {"file": "k.py", "line": "3", "col": "5", "endLine": "3", "title": "WH003"}


def test_escaping_of_message_and_properties(rules: dict[str, RuleInfo]) -> None:
    message = "100% of lanes, in a: b\r\nsecond line"
    record = Record(
        Stage.CONSTRAINT,
        "WH003",
        Severity.WARNING,
        Location("dir,x/a:b%.py", 1, 0, 1, 2),
        message,
        hint="use 50%",
    )
    line = _github([FileResult("dir,x/a:b%.py", (record,))], rules)
    assert line.count("\n") == 1 and "\r" not in line
    assert line == (
        "::warning file=dir%2Cx/a%3Ab%25.py,line=1,col=1,endLine=1,endColumn=3,title=WH003::"
        "100%25 of lanes, in a: b%0D%0Asecond line%0Ahint: use 50%25\n"
    )
    level, props, text = _parse(line.rstrip("\n"))
    assert level == "warning"
    assert props["file"] == "dir,x/a:b%.py"
    assert text == message + "\nhint: use 50%"

    assert escape_data("a%b\nc\rd,e:f") == "a%25b%0Ac%0Dd,e:f"
    assert escape_property("a%b\nc\rd,e:f") == "a%25b%0Ac%0Dd%2Ce%3Af"
    # '%' first, so an already escaped-looking text is not mangled into something else
    assert escape_data("%0A") == "%250A"


def test_title_with_special_characters_is_escaped(rules: dict[str, RuleInfo]) -> None:
    record = Record(Stage.INTERNAL, "internal:error,x", Severity.ERROR, Location("k.py", 1), "boom")
    _, props, _ = _parse(_github([FileResult("k.py", (record,))], rules).strip())
    assert props["title"] == "internal:error,x"


def test_no_findings_no_output(rules: dict[str, RuleInfo]) -> None:
    assert _github([FileResult("ok.py", ())], rules) == ""
    assert render("github", make_results(), rules=rules, tool_version="0.1.0") == _github(
        make_results(), rules
    )
