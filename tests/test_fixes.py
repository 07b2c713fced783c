from __future__ import annotations

from warp_harness.engine import _resolve_conflicts
from warp_harness.fixes import apply_edits, apply_fixes
from warp_harness.record import Fix, Location, Record, Severity, Stage, TextEdit


def _record(rule: str, priority: int, line: int = 3, col: int = 4, fix: Fix | None = None) -> Record:
    return Record(
        Stage.CONSTRAINT,
        rule,
        Severity.ERROR,
        Location("k.py", line, col, line, col + 5),
        "m",
        fix=fix,
        priority=priority,
    )


def test_edits_apply_from_the_end_and_overlaps_are_dropped() -> None:
    text = "abc\ndef\nghi\n"
    new, applied = apply_edits(
        text, [TextEdit(1, 0, 1, 1, "A"), TextEdit(3, 1, 3, 3, "XY"), TextEdit(3, 2, 3, 3, "Z")]
    )
    assert new == "Abc\ndef\ngXY\n" and applied == 2
    inserted, _ = apply_edits(text, [TextEdit(2, 0, 2, 0, "new\n")])
    assert inserted == "abc\nnew\ndef\nghi\n"


def test_a_fix_applies_as_a_unit() -> None:
    text = "x = 1\ny = 2\n"
    both = Fix("two edits", (TextEdit(1, 4, 1, 5, "10"), TextEdit(2, 4, 2, 5, "20")))
    clash = Fix("overlaps the first", (TextEdit(1, 4, 1, 5, "99"),))
    new, applied = apply_fixes(text, [_record("WH1", 1, fix=both), _record("WH2", 1, fix=clash)])
    assert new == "x = 10\ny = 20\n" and applied == 1


def test_same_span_keeps_the_higher_priority_rule() -> None:
    kept = _resolve_conflicts([_record("WH003", 40), _record("WH004", 70), _record("WH005", 50, line=9)])
    assert sorted(r.rule for r in kept) == ["WH004", "WH005"]
