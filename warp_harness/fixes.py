"""Applying fixes (text edits) to source text."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from warp_harness.record import Record, TextEdit


def _offsets(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _offset(starts: list[int], text: str, line: int, col: int) -> int:
    if line - 1 >= len(starts):
        return len(text)
    return min(starts[line - 1] + col, len(text))


def apply_edits(text: str, edits: Sequence[TextEdit]) -> tuple[str, int]:
    """Apply non-overlapping edits (later ones that overlap an earlier one are dropped)."""
    starts = _offsets(text)
    spans = sorted(
        (
            (_offset(starts, text, e.line, e.col), _offset(starts, text, e.end_line, e.end_col), e)
            for e in edits
        ),
        key=lambda s: (s[0], s[1]),
    )
    chosen: list[tuple[int, int, TextEdit]] = []
    last_end = -1
    for start, end, edit in spans:
        if start < last_end or (chosen and start == chosen[-1][0] == end == chosen[-1][1]):
            continue
        chosen.append((start, end, edit))
        last_end = end
    for start, end, edit in reversed(chosen):
        text = text[:start] + edit.new_text + text[end:]
    return text, len(chosen)


def compatible_fix_edits(
    text: str, records: Iterable[Record], safe_only: bool = True
) -> tuple[list[TextEdit], int]:
    """The edits of every fix that can be applied together (each fix whole or not at all), in order.

    Returns the edits and how many fixes they come from; a fix overlapping one taken earlier is left out.
    """
    chosen = compatible_fixes(text, records, safe_only)
    return [e for r in chosen if r.fix is not None for e in r.fix.edits], len(chosen)


def compatible_fixes(text: str, records: Iterable[Record], safe_only: bool = True) -> list[Record]:
    """The records whose fixes `compatible_fix_edits` takes, in order."""
    starts = _offsets(text)
    taken: list[tuple[int, int]] = []
    chosen: list[Record] = []
    for record in records:
        fix = record.fix
        if fix is None or (safe_only and not fix.safe) or not fix.edits:
            continue
        spans = [
            (_offset(starts, text, e.line, e.col), _offset(starts, text, e.end_line, e.end_col))
            for e in fix.edits
        ]
        if any((s < te and ts < e) or (s == e == ts == te) for s, e in spans for ts, te in taken):
            continue
        taken.extend(spans)
        chosen.append(record)
    return chosen


def apply_fixes(text: str, records: Iterable[Record], safe_only: bool = True) -> tuple[str, int]:
    """Apply each record's fix as a unit (all its edits or none); returns new text and fixes applied."""
    edits, applied = compatible_fix_edits(text, records, safe_only)
    new_text, _ = apply_edits(text, edits)
    return new_text, applied


def fix_until_stable(
    text: str,
    records: Sequence[Record],
    recheck: Callable[[str], Sequence[Record]],
    safe_only: bool = True,
    rounds: int = 5,
) -> tuple[str, Sequence[Record], int, list[Record]]:
    """Apply the fixes of ``records``, re-check the text (``recheck``) and again, until a round changes
    nothing (a fix can expose or shift another): (text, its records, fixes applied, the records fixed)."""
    total = 0
    fixed: list[Record] = []
    for _ in range(rounds):
        chosen = compatible_fixes(text, records, safe_only)
        new_text, applied = apply_fixes(text, chosen, safe_only)
        if not applied or new_text == text:
            break
        total += applied
        fixed.extend(chosen)
        text = new_text
        records = recheck(text)
    return text, records, total, fixed
