"""GitLab code quality report (a subset of Code Climate's issue format), as Ruff writes it::

    [{"check_name": "WH003", "description": "WH003: ...", "severity": "major",
      "fingerprint": "<sha256>", "location": {"path": "k.py", "lines": {"begin": 4, "end": 4}}}]

Severities: error -> ``major``, warning -> ``minor``, info and hint -> ``info``. The
fingerprint hashes the rule, the path and the record's line text (its message when the
source is not at hand) plus the occurrence count of that triple, so it survives edits
elsewhere in the file, as GitLab needs to match findings across pipelines. Paths are as
given (GitLab wants them relative to the repository root: run from there). A notebook's record
names its cell in the description (``WH003: cell 3: ...``); its lines are then lines of that cell,
and the fingerprint's line text is the cell's.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..digests import sha256
from ..record import Severity
from .json import printable
from .model import FileResult, RuleInfo, end_of

_SEVERITY = {
    Severity.ERROR: "major",
    Severity.WARNING: "minor",
    Severity.INFO: "info",
    Severity.HINT: "info",
}


def render_gitlab(
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    del rules, tool_version, color
    issues: list[dict[str, Any]] = []
    for result in results:
        seen: Counter[str] = Counter()
        path = printable(result.path)
        for record in result.records:
            line = max(record.location.line, 1)
            cell = "" if record.location.cell is None else f"cell {record.location.cell}: "
            anchor = (result.line_text(line, record.location.cell) or record.message).strip()
            basis = "\0".join((record.rule, path, anchor))
            seen[basis] += 1
            digest = sha256(f"{basis}\0{seen[basis]}".encode("utf-8", "surrogatepass")).hexdigest()
            issues.append(
                {
                    "check_name": record.rule,
                    "description": f"{record.rule}: {cell}{printable(record.message)}",
                    "severity": _SEVERITY[record.severity],
                    "fingerprint": digest,
                    "location": {"path": path, "lines": {"begin": line, "end": end_of(record)[0]}},
                }
            )
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
