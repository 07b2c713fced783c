"""``# wh: ignore[WH003]`` on a line, ``# wh: ignore-file[WH012]`` anywhere in a file.

Without a list (``# wh: ignore``) every rule is silenced for that line or file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from warp_harness.record import Record

_COMMENT = re.compile(r"#\s*wh:\s*(ignore-file|ignore)(?:\[([A-Za-z0-9_,\s]*)\])?")

ALL = frozenset({"*"})


@dataclass
class Suppressions:
    lines: dict[int, frozenset[str]] = field(default_factory=dict)
    file: frozenset[str] = frozenset()

    @classmethod
    def from_lines(cls, lines: list[str]) -> Suppressions:
        result = cls()
        for number, line in enumerate(lines, start=1):
            if "wh:" not in line:
                continue
            for match in _COMMENT.finditer(line):
                kind, codes = match.group(1), match.group(2)
                rules = frozenset(c.strip().upper() for c in codes.split(",") if c.strip()) if codes else ALL
                if kind == "ignore-file":
                    result.file = result.file | rules
                else:
                    result.lines[number] = result.lines.get(number, frozenset()) | rules
        return result

    @staticmethod
    def _matches(rules: frozenset[str], rule_id: str) -> bool:
        return "*" in rules or any(rule_id.startswith(r) for r in rules)

    def is_suppressed(self, record: Record) -> bool:
        if self._matches(self.file, record.rule):
            return True
        line = self.lines.get(record.location.line)
        return line is not None and self._matches(line, record.rule)
