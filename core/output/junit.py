"""JUnit XML for CI test reports::

    <testsuites name="warp-harness" tests="2" failures="1" errors="0">
      <testsuite name="warp-harness" tests="2" failures="1" errors="0" skipped="0" time="0">
        <testcase name="k.py" classname="k.py" file="k.py" time="0">
          <failure type="WH007" message="tiles need 96 KiB ...">k.py:12:5: [error] ...</failure>
        </testcase>
        <testcase name="ok.py" classname="ok.py" file="ok.py" time="0" />
      </testsuite>
    </testsuites>

One testcase per checked file; a file fails with one ``<failure>`` per error or warning
record. Info and hint records do not fail it and go to its ``<system-out>``. ``tests`` is
the number of files, ``failures`` the number of failing files. Characters that XML 1.0
cannot hold (ANSI escapes in compiler output ...) are replaced with U+FFFD.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence

from ..record import Record, Severity
from .model import FileResult, RuleInfo, format_value

SUITE_NAME = "warp-harness"
_FAILING = (Severity.ERROR, Severity.WARNING)
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_safe(text: str) -> str:
    return _XML_INVALID.sub("\ufffd", text)


def _body(path: str, record: Record) -> str:
    loc = record.location
    lines = [
        f"{path}:{max(loc.line, 1)}:{max(loc.col, 0) + 1}: {record.rule} [{record.severity.value}] "
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
        lines.append(f"related: {rloc.path}:{max(rloc.line, 1)}:{max(rloc.col, 0) + 1}: {related.message}")
    if record.fix is not None and record.fix.edits:
        lines.append(f"fix available{'' if record.fix.safe else ' (unsafe)'}: {record.fix.title}")
    return xml_safe("\n".join(lines))


def junit_tree(results: Sequence[FileResult]) -> ET.Element:
    failing_files = 0
    suite = ET.Element("testsuite")
    for result in results:
        case = ET.SubElement(
            suite, "testcase", name=xml_safe(result.path), classname=xml_safe(result.path), time="0"
        )
        case.set("file", xml_safe(result.path))
        failures = [r for r in result.records if r.severity in _FAILING]
        notes = [r for r in result.records if r.severity not in _FAILING]
        for record in failures:
            failure = ET.SubElement(case, "failure", type=xml_safe(record.rule))
            failure.set("message", xml_safe(record.message))
            failure.text = _body(result.path, record)
        if notes:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(_body(result.path, r) for r in notes)
        if failures:
            failing_files += 1
    counts = {"tests": str(len(results)), "failures": str(failing_files), "errors": "0"}
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
