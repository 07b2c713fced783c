"""`check --add-noqa`: a ``# wh: ignore[...]`` comment for every finding, on the line it is reported at,
as Ruff's ``--add-noqa`` (a way to adopt new rules on existing code and fix the findings one by one).

A line that already has ``# wh: ignore[...]`` gets the missing codes added to it; a line with a blanket
``# wh: ignore`` is left as it is; a line whose end is inside a string (a multi-line string literal) cannot
hold a comment and is skipped (counted). Notebooks are left alone.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from warp_harness.record import Record, Stage

_NOT_SUPPRESSED = frozenset({"WH016", "WH998", "WH999"})
_EXISTING = re.compile(r"#\s*wh:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")


@dataclass(frozen=True)
class Added:
    """What one file got: the text with the comments, how many lines changed, how many could not."""

    text: str
    added: int
    skipped: int


def _lines_ending_in_strings(text: str) -> set[int]:
    """1-based lines whose end lies inside a string token (a comment there would be part of the string)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING or token.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return inside


def codes_by_line(records: Iterable[Record]) -> Mapping[int, list[str]]:
    """The rule ids to suppress per 1-based line, each once, in id order."""
    by_line: dict[int, set[str]] = {}
    for record in records:
        # a syntax error cannot be silenced, an unused suppression is fixed by removing it, and the
        # engine's own ids (unreadable file, internal error) are not findings about a line
        if record.stage is Stage.SYNTAX or record.rule in _NOT_SUPPRESSED:
            continue
        if record.location.cell is None:
            by_line.setdefault(record.location.line, set()).add(record.rule)
    return {line: sorted(codes) for line, codes in by_line.items()}


def add_noqa(text: str, records: Iterable[Record]) -> Added:
    """``text`` with a ``# wh: ignore[...]`` for each line that has findings."""
    wanted = codes_by_line(records)
    if not wanted:
        return Added(text, 0, 0)
    lines = text.splitlines(keepends=True)
    in_string = _lines_ending_in_strings(text)
    added = skipped = 0
    for line_no, codes in sorted(wanted.items()):
        if not 1 <= line_no <= len(lines) or line_no in in_string:
            skipped += 1
            continue
        line = lines[line_no - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        found = _EXISTING.search(body)
        if found is not None:
            if found.group(1) is None:  # a blanket `# wh: ignore` already silences every rule
                continue
            present = [c.strip() for c in found.group(1).split(",") if c.strip()]
            missing = [c for c in codes if c not in present]
            if not missing:
                continue
            merged = ", ".join([*present, *missing])
            body = body[: found.start()] + f"# wh: ignore[{merged}]" + body[found.end() :]
        else:
            body = body.rstrip() + f"  # wh: ignore[{', '.join(codes)}]"
        lines[line_no - 1] = body + (ending or ("\n" if line_no < len(lines) else ""))
        added += 1
    return Added("".join(lines), added, skipped)
