"""## WH016 unused-suppression

A `# wh: ignore[...]` (or `# wh: ignore-file[...]`) comment silences nothing: no rule reports a
record on its line (in its file, for `ignore-file`) for the codes it lists. Reported once per
comment, naming the codes that are not needed; the fix removes the comment, or only the unused
codes when some of them are still needed. Like Ruff's RUF100 (unused `noqa`).

Every static rule is consulted, whatever `select`/`ignore` enable, so a suppression for a rule
the current run leaves out is not called unused. Only codes naming a static rule are judged:
codes of the dynamic tier (`WHD...`), `WH000` and this rule's own code never are, and nothing is
reported in a file with a syntax error. A file with suppression comments runs every rule twice
(once with them applied, once to see what they silence); files without one cost nothing more.

### Why it matters
A suppression outlives the code it was written for: after a fix, it silently hides the next
real problem on that line. Removing stale ones keeps every remaining `# wh: ignore` meaningful.

### Bad
```python
@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s  # wh: ignore[WH003]
```

### Good
```python
@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s
```

### Fix safety
Safe: removing a comment that silences nothing changes no record and no behaviour.
"""

from __future__ import annotations

from collections.abc import Iterable

from warp_harness.record import Fix, Location, Record, Severity, TextEdit
from warp_harness.rules.base import Rule, RuleContext, Scope
from warp_harness.suppressions import Comment, comments, unused_codes

_ID = "WH016"
# rules whose records the engine itself reports (or this rule): a code naming them is never judged
_NOT_JUDGED = frozenset({"WH000", _ID})


class UnusedSuppression(Rule):
    """Judges the suppression comments against every other rule's records on the whole file."""

    id = _ID
    name = "unused-suppression"
    summary = "a `# wh: ignore` comment that silences nothing"
    severity = Severity.WARNING
    priority = 10
    fixable = True
    scope = Scope.MODULE

    def applies(self, ctx: RuleContext) -> bool:
        return ctx.model.source.syntax_error is None and any("wh:" in line for line in ctx.model.lines)

    def check_module(self, ctx: RuleContext) -> Iterable[Record]:
        found = comments(ctx.model.lines)
        if not found:
            return []
        records, known = _every_record(ctx)
        out: list[Record] = []
        for comment in found:
            unused = unused_codes(comment, records, known)
            if unused is not None:
                out.append(_record(ctx, comment, unused))
        return out


def _every_record(ctx: RuleContext) -> tuple[list[Record], frozenset[str]]:
    """Every other static rule's records on this file, enabled or not, before suppressions."""
    from warp_harness.engine import scoped_records  # the engine imports the rules: import late
    from warp_harness.rules import all_rules

    records: list[Record] = []
    known: set[str] = set()
    for rule in all_rules():
        if rule.id in _NOT_JUDGED:
            continue
        known.add(rule.id)
        try:
            records.extend(record for _, _, record in scoped_records(rule, ctx))
        except Exception:  # the engine reports a broken rule; what it silences is unknown
            known.discard(rule.id)
    return records, frozenset(known)


def _record(ctx: RuleContext, comment: Comment, unused: tuple[str, ...]) -> Record:
    line = ctx.model.lines[comment.line - 1].rstrip("\r\n")
    kind = "ignore-file" if comment.file_wide else "ignore"
    kept = [c for c in comment.codes if c not in unused]
    if kept:
        what = f"unused code{'s' if len(unused) > 1 else ''} {', '.join(unused)} in `# wh: {kind}`"
        edit = TextEdit(
            comment.line, comment.col, comment.line, comment.end_col, f"# wh: {kind}[{', '.join(kept)}]"
        )
        title = f"Remove {', '.join(unused)} from the suppression"
    else:
        codes = f"[{', '.join(comment.codes)}]" if comment.codes else ""
        what = f"unused suppression `# wh: {kind}{codes}`: it silences nothing"
        edit = _removal(line, comment)
        title = "Remove the unused suppression"
    return Record(
        stage=UnusedSuppression.stage,
        rule=_ID,
        severity=UnusedSuppression.severity,
        location=Location(ctx.path, comment.line, comment.col, comment.line, comment.end_col),
        message=what,
        hint="remove it; the code no longer needs it",
        fix=Fix(title, (edit,)),
        priority=UnusedSuppression.priority,
    )


def _removal(line: str, comment: Comment) -> TextEdit:
    """Delete the comment with the spaces before it; a line holding only the comment goes entirely."""
    before = line[: comment.col].rstrip()
    after = line[comment.end_col :]
    if not before and not after.strip():
        return TextEdit(comment.line, 0, comment.line + 1, 0, "")
    return TextEdit(comment.line, len(before), comment.line, comment.end_col, "  " if after.strip() else "")
