"""JUnit XML for CI test reports::

    <testsuites name="warp-harness" tests="3" failures="2" errors="0">
      <testsuite name="warp-harness" tests="3" failures="2" errors="0" skipped="0" time="0">
        <testcase name="k.py:12:5 WH007" classname="k.py" file="k.py" line="12" time="0">
          <failure type="WH007" message="tiles need 96 KiB ...">k.py:12:5: WH007 [error] ...</failure>
        </testcase>
        <testcase name="k.py:20:9 WH003" classname="k.py" file="k.py" line="20" time="0">
          <failure type="WH003" message="...">...</failure>
        </testcase>
        <testcase name="ok.py" classname="ok.py" file="ok.py" time="0" />
      </testsuite>
    </testsuites>

One testcase per error or warning record (it fails with exactly one ``<failure>``, as
JUnit consumers expect), and one passing testcase for each checked file without one, so
``tests`` counts testcases and ``failures`` the failing ones. Info and hint records do not
fail anything and go to the ``<system-out>`` of their file's first testcase. Values are
formatted as in the text output (``{:.4g}``). Characters that XML 1.0 cannot hold (ANSI
escapes in compiler output ...) are replaced with U+FFFD. A notebook's record names its cell
where a location is written (``nb.ipynb:cell 3:4:12 WH003``, as the text output does); the
``line`` attribute is then the line in that cell.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence

from ..record import Record, Severity
from .model import FileResult, RuleInfo, format_value, position

SUITE_NAME = "warp-harness"
_FAILING = (Severity.ERROR, Severity.WARNING)
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    return _XML_INVALID.sub("\ufffd", text)


def _body(path: str, record: Record) -> str:
    loc = record.location
    lines = [
        f"{path}:{position(loc)}: {record.rule} [{record.severity.value}] "
        f"({record.stage.value}) {record.message}"
    ]
    if loc.kernel:
        lines.append(f"kernel: {loc.kernel}")
    if record.hint:
        lines.append(f"hint: {record.hint}")
    if record.expected is not None:
        lines.append(f"expected: {format_value(record.expected)}")
    if record.actual is not None:
        lines.append(f"actual: {format_value(record.actual)}")
    for related in record.related:
        rloc = related.location
        lines.append(f"related: {rloc.path}:{position(rloc)}: {related.message}")
    if record.fix is not None and record.fix.edits:
        lines.append(f"fix available{'' if record.fix.safe else ' (unsafe)'}: {record.fix.title}")
    return xml_safe("\n".join(lines))


def _case(suite: ET.Element, path: str, record: Record | None) -> ET.Element:
    shown = xml_safe(path)
    if record is None:
        return ET.SubElement(suite, "testcase", name=shown, classname=shown, file=shown, time="0")
    loc = record.location
    case = ET.SubElement(
        suite, "testcase", name=xml_safe(f"{path}:{position(loc)} {record.rule}"), classname=shown
    )
    case.set("file", shown)
    case.set("line", str(max(loc.line, 1)))
    case.set("time", "0")
    failure = ET.SubElement(case, "failure", type=xml_safe(record.rule))
    failure.set("message", xml_safe(record.message))
    failure.text = _body(path, record)
    return case


def junit_tree(results: Sequence[FileResult]) -> ET.Element:
    tests = failed = 0
    suite = ET.Element("testsuite")
    for result in results:
        failures = [r for r in result.records if r.severity in _FAILING]
        notes = [r for r in result.records if r.severity not in _FAILING]
        cases = [_case(suite, result.path, r) for r in failures] or [_case(suite, result.path, None)]
        if notes:
            out = ET.SubElement(cases[0], "system-out")
            out.text = "\n".join(_body(result.path, r) for r in notes)
        tests += len(cases)
        failed += len(failures)
    counts = {"tests": str(tests), "failures": str(failed), "errors": "0"}
    suite.attrib = {"name": SUITE_NAME, **counts, "skipped": "0", "time": "0"}
    root = ET.Element("testsuites", {"name": SUITE_NAME, **counts})
    root.append(suite)
    return root


def render_junit(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del rules, tool_version, color
    root = junit_tree(results)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
