"""``# wh: ignore[WH003]`` on a line, ``# wh: ignore-file[WH012]`` anywhere in a file.

Without a list (``# wh: ignore``) every rule is silenced for that line or file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from warp_harness.record import Record

_COMMENT = re.compile(r"#\s*wh:\s*(ignore-file|ignore)(?:\[([A-Za-z0-9_,\s]*)\])?")

ALL = frozenset({"*"})
MARK = "wh:"  # in every comment; a text without it holds none
# the last text asked about and whether it holds the mark (a scan costs ~0.25 ms per 400 KB)
_last_scan: tuple[str, bool] = ("", False)


def may_hold_comments(text: str) -> bool:
    """Whether ``text`` may hold a suppression comment: the finish step and WH016 ask about the same text."""
    global _last_scan
    last = _last_scan
    if last[0] is text:
        return last[1]
    found = MARK in text
    _last_scan = (text, found)
    return found


def remember_scan(text: str, found: bool) -> None:
    """What a caller that knows it (from the parts ``text`` is made of) tells `may_hold_comments`."""
    global _last_scan
    _last_scan = (text, found)


# WH016 (unused-suppression): silenced only by a comment naming it, not by a bare one or a prefix
UNUSED_RULE = "WH016"


@dataclass(eq=False)
class Suppressions:
    """The rules silenced per line and for the whole file by ``# wh: ignore`` comments."""

    lines: dict[int, frozenset[str]] = field(default_factory=dict)
    file: frozenset[str] = frozenset()

    @classmethod
    def from_lines(cls, lines: list[str]) -> Suppressions:
        result = cls()
        for number, line in enumerate(lines, start=1):
            if MARK not in line:
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
        if rule_id == UNUSED_RULE:  # a comment reported as unused cannot silence that report itself
            return UNUSED_RULE in rules
        return "*" in rules or any(rule_id.startswith(r) for r in rules)

    def is_suppressed(self, record: Record) -> bool:
        if self._matches(self.file, record.rule):
            return True
        line = self.lines.get(record.location.line)
        return line is not None and self._matches(line, record.rule)


@dataclass(frozen=True)
class Comment:
    """One ``# wh: ignore[...]`` / ``# wh: ignore-file[...]`` comment and where it sits (0-based columns)."""

    line: int
    col: int
    end_col: int
    file_wide: bool
    codes: tuple[str, ...]  # as written, upper-cased; () for a bare comment (every rule)


def comments(lines: list[str]) -> list[Comment]:
    found: list[Comment] = []
    for number, line in enumerate(lines, start=1):
        if "wh:" not in line:
            continue
        for match in _COMMENT.finditer(line):
            codes = match.group(2)
            found.append(
                Comment(
                    number,
                    match.start(),
                    match.end(),
                    match.group(1) == "ignore-file",
                    tuple(c.strip().upper() for c in codes.split(",") if c.strip()) if codes else (),
                )
            )
    return found


def unused_codes(comment: Comment, records: list[Record], known: frozenset[str]) -> tuple[str, ...] | None:
    """The codes of ``comment`` that silence none of ``records`` (every rule's records, unsuppressed);
    ``("*",)`` for a bare comment that silences nothing; None when every code is used.

    Only codes that name a known static rule (id or prefix in ``known``) are judged: a code for the
    dynamic tier or for a rule the engine reports (syntax, unreadable) is never called unused."""
    relevant = [r for r in records if comment.file_wide or r.location.line == comment.line]
    if not comment.codes:
        return None if relevant else ("*",)
    unused = tuple(
        code
        for code in comment.codes
        if any(k.startswith(code) for k in known) and not any(r.rule.startswith(code) for r in relevant)
    )
    return unused or None
