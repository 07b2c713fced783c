"""SARIF 2.1.0 for GitHub code scanning (``github/codeql-action/upload-sarif``).

- ``runs[0].tool.driver.rules`` lists every rule of the registry (sorted by id) and, after
  them, one synthesised entry per ad-hoc rule id found in the results (``compile-error``,
  ``crash`` ...), so every result has a valid ``ruleIndex``.
- Levels: error -> ``error``, warning -> ``warning``, info and hint -> ``note``.
- Regions: SARIF lines and columns are 1-based, record columns are 0-based; ``endColumn``
  is exclusive in both, so both columns shift by one.
- Paths become relative POSIX URIs against ``%SRCROOT%`` (an absolute path under the
  current directory is made relative to it; one elsewhere becomes a ``file://`` URI). A URI
  percent-encodes the file name's bytes, so a name that is not valid UTF-8 (``b"k\\xff.py"``)
  is ``k%FF.py``; in text (messages, snippets) such a byte shows as ``\\xff`` (json.printable).
- ``partialFingerprints.primaryLocationLineHash`` hashes rule, path and the stripped text
  of the line (the message when the source is not given) plus an occurrence counter, so a
  finding keeps its identity when lines above it move.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from ..digests import sha256
from ..docs_url import rules_doc_url
from ..record import Location, Record, Severity, TextEdit
from .json import printable_tree
from .model import STAGE_DESCRIPTIONS, FileResult, RuleInfo, jsonable, rule_title

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
TOOL_NAME = "warp-harness"
# the installed rules documentation (a file URI, or $WARP_HARNESS_DOCS_URL): no made-up project site
INFORMATION_URI = rules_doc_url()
SRCROOT = "%SRCROOT%"

_LEVELS: dict[Severity, str] = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.HINT: "note",
}

_WINDOWS_ABS = re.compile(r"^[A-Za-z]:[\\/]")


def sarif_level(severity: Severity) -> str:
    return _LEVELS[severity]


def artifact_location(path: str, root: str | None = None) -> dict[str, str]:
    """``{"uri": ..., "uriBaseId": "%SRCROOT%"}`` for a relative path, a ``file://`` URI
    for an absolute path outside ``root`` (default: the current directory)."""
    if _WINDOWS_ABS.match(path):
        return {"uri": PureWindowsPath(path).as_uri()}
    posix = path.replace("\\", "/")
    if posix.startswith("/"):
        base = Path(root if root is not None else os.getcwd()).resolve()
        try:
            posix = Path(posix).resolve().relative_to(base).as_posix()
        except ValueError:
            return {"uri": PurePosixPath(posix).as_uri()}
    while posix.startswith("./"):
        posix = posix[2:]
    return {"uri": quote(_name_bytes(posix), safe="/"), "uriBaseId": SRCROOT}


def _name_bytes(text: str) -> bytes:
    """A file name's bytes: UTF-8, with surrogate escapes (``os.fsdecode`` of a name that is
    not valid UTF-8) turned back into the bytes they stand for; any other lone surrogate as
    UTF-8 would spell it (so it is still percent-encoded, never an error)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def region(line: int, col: int, end_line: int | None, end_col: int | None) -> dict[str, int]:
    """A SARIF region from record positions (1-based lines, 0-based columns)."""
    line = max(line, 1)
    col = max(col, 0)
    out = {"startLine": line, "startColumn": col + 1}
    if end_line is None and end_col is None:
        return out
    stop_line = end_line if end_line is not None else line
    stop_col = end_col if end_col is not None else col
    if stop_line < line or (stop_line == line and stop_col < col):
        stop_line, stop_col = line, col
    out["endLine"] = stop_line
    out["endColumn"] = max(stop_col, 0) + 1
    return out


def _physical(location: Location, path: str, root: str | None, snippet: str | None) -> dict[str, Any]:
    reg: dict[str, Any] = region(location.line, location.col, location.end_line, location.end_col)
    if snippet is not None:
        reg["snippet"] = {"text": snippet}
    if location.cell is not None:
        # a notebook: lines count in the cell (SARIF 2.1.0 has no cell; §3.8 property bag)
        reg["properties"] = {"cell": location.cell}
    return {"artifactLocation": artifact_location(path, root), "region": reg}


def _rule_descriptor(info: RuleInfo) -> dict[str, Any]:
    summary = info.summary or info.name or info.id
    doc = info.doc or summary
    markdown = f"**{info.id}** ({info.name}): {summary}\n\n{doc}"
    if info.url:
        markdown += f"\n\n[Documentation]({info.url})"
    descriptor: dict[str, Any] = {
        "id": info.id,
        "name": info.name or info.id,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": doc},
    }
    if info.url:
        descriptor["helpUri"] = info.url
    descriptor["help"] = {"text": doc, "markdown": markdown}
    descriptor["defaultConfiguration"] = {"level": sarif_level(info.severity)}
    descriptor["properties"] = {"tags": ["warp", "constraint"]}
    return descriptor


def _adhoc_descriptor(record: Record) -> dict[str, Any]:
    text = STAGE_DESCRIPTIONS[record.stage]
    return {
        "id": record.rule,
        "name": rule_title(record.rule),
        "shortDescription": {"text": text},
        "fullDescription": {"text": f"{text} (stage: {record.stage.value})."},
        "help": {"text": text, "markdown": text},
        "defaultConfiguration": {"level": sarif_level(record.severity)},
        "properties": {"tags": ["warp", record.stage.value]},
    }


def _message(record: Record) -> str:
    text = record.message
    if record.hint:
        text += f"\nhint: {record.hint}"
    return text


def _fingerprint(rule: str, path: str, anchor: str) -> str:
    data = "\0".join((rule, path.replace("\\", "/"), " ".join(anchor.split())))
    return sha256(_name_bytes(data)).hexdigest()[:16]


def _replacement(edit: TextEdit, cell: int | None) -> dict[str, Any]:
    deleted: dict[str, Any] = region(edit.line, edit.col, edit.end_line, edit.end_col)
    if cell is not None:  # a notebook's fix edits its record's cell, in that cell's lines
        deleted["properties"] = {"cell": cell}
    return {"deletedRegion": deleted, "insertedContent": {"text": edit.new_text}}


def sarif_log(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    root: str | None = None,
) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict (``render_sarif`` serialises it)."""
    descriptors = [_rule_descriptor(rules[key]) for key in sorted(rules)]
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    sarif_results: list[dict[str, Any]] = []
    occurrences: dict[str, int] = {}

    for result in results:
        for record in result.records:
            if record.rule not in index:
                index[record.rule] = len(descriptors)
                descriptors.append(_adhoc_descriptor(record))
            loc = record.location
            line_text = result.line_text(loc.line, loc.cell)
            location: dict[str, Any] = {"physicalLocation": _physical(loc, result.path, root, line_text)}
            logical: list[dict[str, Any]] = []
            if loc.kernel:
                logical.append({"name": loc.kernel, "kind": "function"})
            if loc.cell is not None:  # the notebook cell as a logical location too (§3.33)
                logical.append(
                    {"name": f"cell {loc.cell}", "fullyQualifiedName": f"{result.path}#cell{loc.cell}"}
                )
            if logical:
                location["logicalLocations"] = logical

            hash_ = _fingerprint(
                record.rule, result.path, line_text if line_text is not None else record.message
            )
            occurrences[hash_] = occurrences.get(hash_, 0) + 1

            item: dict[str, Any] = {
                "ruleId": record.rule,
                "ruleIndex": index[record.rule],
                "level": sarif_level(record.severity),
                "message": {"text": _message(record)},
                "locations": [location],
                "partialFingerprints": {"primaryLocationLineHash": f"{hash_}:{occurrences[hash_]}"},
            }
            if record.related:
                item["relatedLocations"] = [
                    {
                        "id": i,
                        "physicalLocation": _physical(rel.location, rel.location.path, root, None),
                        "message": {"text": rel.message},
                    }
                    for i, rel in enumerate(record.related, start=1)
                ]
            if record.fix is not None and record.fix.edits:
                item["fixes"] = [
                    {
                        "description": {"text": record.fix.title},
                        "artifactChanges": [
                            {
                                "artifactLocation": artifact_location(result.path, root),
                                "replacements": [_replacement(e, loc.cell) for e in record.fix.edits],
                            }
                        ],
                    }
                ]
            properties: dict[str, Any] = {"stage": record.stage.value, "severity": record.severity.value}
            if loc.kernel:
                properties["kernel"] = loc.kernel
            if record.expected is not None:
                properties["expected"] = jsonable(record.expected)
            if record.actual is not None:
                properties["actual"] = jsonable(record.actual)
            if record.hint:
                properties["hint"] = record.hint
            if record.fix is not None and record.fix.edits:
                properties["fixSafe"] = record.fix.safe
            item["properties"] = properties
            sarif_results.append(item)

    driver: dict[str, Any] = {
        "name": TOOL_NAME,
        "version": tool_version,
        "informationUri": INFORMATION_URI,
        "rules": descriptors,
    }
    if re.fullmatch(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?", tool_version):
        driver["semanticVersion"] = tool_version
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": driver},
                "columnKind": "unicodeCodePoints",
                "results": sarif_results,
            }
        ],
    }


def render_sarif(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
    root: str | None = None,
) -> str:
    del color
    log = printable_tree(sarif_log(results, rules=rules, tool_version=tool_version, root=root))
    return json.dumps(log, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
