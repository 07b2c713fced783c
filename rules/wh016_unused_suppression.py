"""## WH016 unused-suppression

A `# wh: ignore[...]` (or `# wh: ignore-file[...]`) comment silences nothing: no rule reports a
record on its line (in its file, for `ignore-file`) for the codes it lists. Reported once per
comment, naming the codes that are not needed; the fix removes the comment, or only the unused
codes when some of them are still needed. Like Ruff's RUF100 (unused `noqa`).

Every static rule is consulted, whatever `select`/`ignore` enable, so a suppression for a rule
the current run leaves out is not called unused. Only codes naming a static rule are judged:
codes of the dynamic tier (`WHD...`), `WH000` and this rule's own code never are, and nothing is
reported in a file with a syntax error. The engine judges the comments once the rules have run
(`engine.finish_records`), from the records they produced: no rule runs twice; a rule that
`select`/`ignore` leave out runs only when a comment's verdict depends on what it would report.

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
from warp_harness.rules.base import Findings, Rule, RuleContext, Scope
from warp_harness.suppressions import Comment, comments, may_hold_comments, unused_codes

_ID = "WH016"
# rules whose records the engine itself reports (or this rule): a code naming them is never judged
_NOT_JUDGED = frozenset({"WH000", _ID})


class UnusedSuppression(Rule):
    """Judged from the records the other rules produced (scope FINDINGS)."""

    id = _ID
    name = "unused-suppression"
    summary = "a `# wh: ignore` comment that silences nothing"
    severity = Severity.WARNING
    priority = 10
    fixable = True
    scope = Scope.FINDINGS

    def check_findings(self, ctx: RuleContext, findings: Findings) -> Iterable[Record]:
        """``findings.records``: what the enabled rules reported on the file, before conflicts and
        suppressions; ``findings.failed``: the ids of rules that raised (what they silence is unknown).
        Rules that are not enabled run here, once, only when a comment's verdict depends on them."""
        source = ctx.source
        if source.syntax_error is not None or not may_hold_comments(source.text):
            return []
        found = comments(source.lines)
        if not found:
            return []
        judged = [rule for rule in findings.rules if rule.id not in _NOT_JUDGED]
        known = {rule.id for rule in judged} - findings.failed
        seen = [r for r in findings.records if r.rule not in _NOT_JUDGED]
        verdicts = [unused_codes(comment, seen, frozenset(known)) for comment in found]
        disabled = [rule for rule in judged if not ctx.settings.rule_enabled(rule.id)]
        if disabled and any(v is not None for v in verdicts):
            seen += _records_of(disabled, findings, known)
            verdicts = [unused_codes(comment, seen, frozenset(known)) for comment in found]
        return [
            _record(ctx, c, unused) for c, unused in zip(found, verdicts, strict=True) if unused is not None
        ]


def _records_of(rules: list[Rule], findings: Findings, known: set[str]) -> list[Record]:
    """The records of ``rules`` on the file; a rule that raises leaves ``known``."""
    records: list[Record] = []
    for rule in rules:
        try:
            records.extend(findings.run(rule))
        except Exception:  # the engine reports a broken rule; what it silences is unknown
            known.discard(rule.id)
    return records


def _record(ctx: RuleContext, comment: Comment, unused: tuple[str, ...]) -> Record:
    line = ctx.source.lines[comment.line - 1].rstrip("\r\n")
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
