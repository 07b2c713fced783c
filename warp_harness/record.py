"""The one diagnostic record every tier produces (docs/architecture.md, "The one record").

Positions: ``line``/``end_line`` are 1-based, ``col``/``end_col`` are 0-based character
offsets, as in Python's ``ast``. Renderers convert (LSP uses 0-based lines).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any


class Stage(str, Enum):
    """Where a finding comes from, in the order feedback is prioritised."""

    SYNTAX = "syntax"
    CONSTRAINT = "constraint"
    COMPILE = "compile"
    CRASH = "crash"
    TIMEOUT = "timeout"
    NUMERIC = "numeric"
    PERFORMANCE = "performance"
    INTERNAL = "internal"

    @property
    def rank(self) -> int:
        return _STAGE_ORDER.index(self)


_STAGE_ORDER = list(Stage)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @property
    def rank(self) -> int:
        return _SEVERITY_ORDER.index(self)


_SEVERITY_ORDER = list(Severity)


@dataclass(frozen=True)
class Location:
    """Where a record points: a file, 1-based line, 0-based column, an optional end and kernel."""

    path: str
    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None
    kernel: str | None = None
    # a notebook's cell (1-based position in its cells list); ``line`` is then the line in that cell
    cell: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line if self.end_line is not None else self.line,
            "end_col": self.end_col if self.end_col is not None else self.col,
            "kernel": self.kernel,
        }
        if self.cell is not None:  # only notebooks' records carry the key: .py output is unchanged
            data["cell"] = self.cell
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Location:
        return cls(
            path=str(data["path"]),
            line=int(data["line"]),
            col=int(data.get("col", 0)),
            end_line=data.get("end_line"),
            end_col=data.get("end_col"),
            kernel=data.get("kernel"),
            cell=int(data["cell"]) if data.get("cell") is not None else None,
        )


@dataclass(frozen=True)
class TextEdit:
    """Replace the text between two positions (same conventions as Location)."""

    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "range": {"line": self.line, "col": self.col, "end_line": self.end_line, "end_col": self.end_col},
            "new_text": self.new_text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TextEdit:
        r = data["range"]
        return cls(
            int(r["line"]), int(r["col"]), int(r["end_line"]), int(r["end_col"]), str(data["new_text"])
        )


@dataclass(frozen=True)
class Fix:
    """A titled set of edits that resolves a record; ``safe`` fixes are the ones `check --fix` applies."""

    title: str
    edits: tuple[TextEdit, ...]
    # a safe fix keeps behaviour where the code was already correct; `check --fix` applies only these
    safe: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "edits": [e.to_dict() for e in self.edits], "safe": self.safe}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        return cls(
            str(data["title"]),
            tuple(TextEdit.from_dict(e) for e in data.get("edits", [])),
            bool(data.get("safe", True)),
        )


@dataclass(frozen=True)
class Related:
    """Another place that explains a finding (e.g. the launch site of a kernel)."""

    location: Location
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"location": self.location.to_dict(), "message": self.message}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Related:
        return cls(Location.from_dict(data["location"]), str(data["message"]))


# where a rule's text quotes a line number (`Rule.report(..., lines=...)` fills them in order): source
# text never holds it (Python refuses a NUL in source code)
QUOTED_LINE = "\0"


@dataclass(frozen=True)
class Quotes:
    """The line numbers a record's texts quote ("the loop at line 12"), as data: each quoting text kept as
    the pieces around its numbers. A record moved by an edit moves ``lines`` and renders its texts again
    (`moved`); nothing ever reads a number back out of a text."""

    lines: tuple[int, ...]
    # (field name, the pieces around its numbers: one more than the numbers it quotes), in order
    texts: tuple[tuple[str, tuple[str, ...]], ...]

    @classmethod
    def of(cls, texts: dict[str, str], lines: tuple[int, ...]) -> Quotes:
        """``texts``: field name -> text holding `QUOTED_LINE` where a line is quoted, the lines in order."""
        pieces = tuple((name, tuple(text.split(QUOTED_LINE))) for name, text in texts.items())
        if sum(len(p) - 1 for _, p in pieces) != len(lines):
            raise ValueError(f"{len(lines)} lines for the quotes in {texts!r}")
        return cls(lines, pieces)

    def render(self) -> dict[str, str]:
        """Each quoting text with its lines."""
        rendered: dict[str, str] = {}
        numbers = iter(self.lines)
        for name, pieces in self.texts:
            parts = [pieces[0]]
            for piece in pieces[1:]:
                parts += (str(next(numbers)), piece)
            rendered[name] = "".join(parts)
        return rendered

    def moved(self, line: Callable[[int], int]) -> Quotes:
        """These quotes with each line mapped by ``line`` (itself when none moves)."""
        lines = tuple(map(line, self.lines))
        return self if lines == self.lines else Quotes(lines, self.texts)


@dataclass(frozen=True)
class Record:
    """One finding: its stage, rule, severity, location and message, with optional detail and fix."""

    stage: Stage
    rule: str
    severity: Severity
    location: Location
    message: str
    expected: Any = None
    actual: Any = None
    hint: str | None = None
    fix: Fix | None = None
    related: tuple[Related, ...] = field(default_factory=tuple)
    priority: int = 0
    # the lines the message or hint quote, as data (not on the wire: the texts are rendered already)
    quotes: Quotes | None = field(default=None, compare=False, repr=False)

    def with_severity(self, severity: Severity) -> Record:
        return replace(self, severity=severity)

    def sort_key(self) -> tuple[int, int, int, int, str]:
        """Stage first (constraint before compile before crash ...), then severity, then position."""
        return (self.stage.rank, self.severity.rank, self.location.line, self.location.col, self.rule)

    def report_key(self) -> tuple[int, int, int, int, int, str]:
        """`sort_key` with a notebook's cell before the line (lines restart in every cell): the order
        reports list a file's records in."""
        loc = self.location
        return (self.stage.rank, self.severity.rank, loc.cell or 0, loc.line, loc.col, self.rule)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage.value,
            "rule": self.rule,
            "severity": self.severity.value,
            "location": self.location.to_dict(),
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
            "hint": self.hint,
            "fix": self.fix.to_dict() if self.fix else None,
            "related": [r.to_dict() for r in self.related],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        fix = data.get("fix")
        return cls(
            stage=Stage(data["stage"]),
            rule=str(data["rule"]),
            severity=Severity(data["severity"]),
            location=Location.from_dict(data["location"]),
            message=str(data["message"]),
            expected=data.get("expected"),
            actual=data.get("actual"),
            hint=data.get("hint"),
            fix=Fix.from_dict(fix) if fix else None,
            related=tuple(Related.from_dict(r) for r in data.get("related", [])),
        )
