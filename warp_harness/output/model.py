"""Input types of the renderers, and helpers they share.

Every renderer takes the same inputs: one :class:`FileResult` per checked file (the
records found in it, optionally its source lines) and a mapping of rule id to
:class:`RuleInfo` (the registry's documentation of each rule). Records whose rule is not
in that mapping (``compile-error``, ``crash``, ...) must still render.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..record import Record, Severity, Stage


@dataclass(frozen=True)
class FileResult:
    """The findings of one file. ``source_lines`` (without line endings) lets text output
    show the offending line; it is optional everywhere."""

    path: str
    records: tuple[Record, ...]
    source_lines: tuple[str, ...] | None = None
    # a notebook's cells' lines (cell N is ``cells[N - 1]``); its records' lines are lines of a cell
    cells: tuple[tuple[str, ...], ...] | None = None

    def line_text(self, line: int, cell: int | None = None) -> str | None:
        """Source text of 1-based ``line`` (of notebook cell ``cell``), or None when unknown or out
        of range."""
        lines = self.source_lines
        if cell is not None:
            lines = self.cells[cell - 1] if self.cells is not None and 1 <= cell <= len(self.cells) else None
        if lines is None or line < 1 or line > len(lines):
            return None
        return lines[line - 1].rstrip("\r\n")


@dataclass(frozen=True)
class RuleInfo:
    """What the output needs to know about a rule (id ``WH003``, name ``tile-shape``...)."""

    id: str
    name: str
    summary: str
    severity: Severity
    doc: str
    url: str


@dataclass(frozen=True)
class Counts:
    """How many records of each severity, and how many carry a safe (auto-applicable) fix."""

    errors: int = 0
    warnings: int = 0
    infos: int = 0
    hints: int = 0
    fixable: int = 0
    unsafe_fixable: int = 0

    @property
    def total(self) -> int:
        return self.errors + self.warnings + self.infos + self.hints

    def to_dict(self) -> dict[str, int]:
        return {
            "errors": self.errors,
            "warnings": self.warnings,
            "infos": self.infos,
            "hints": self.hints,
            "fixable": self.fixable,
            "unsafe_fixable": self.unsafe_fixable,
        }


def count(records: Iterable[Record]) -> Counts:
    by_severity = dict.fromkeys(Severity, 0)
    fixable = unsafe = 0
    for record in records:
        by_severity[record.severity] += 1
        if record.fix is not None and record.fix.edits:
            if record.fix.safe:
                fixable += 1
            else:
                unsafe += 1
    return Counts(
        errors=by_severity[Severity.ERROR],
        warnings=by_severity[Severity.WARNING],
        infos=by_severity[Severity.INFO],
        hints=by_severity[Severity.HINT],
        fixable=fixable,
        unsafe_fixable=unsafe,
    )


def all_records(results: Sequence[FileResult]) -> list[Record]:
    return [record for result in results for record in result.records]


def end_of(record: Record) -> tuple[int, int]:
    """(end_line, end_col) of a record, defaulting to its start, never before its start."""
    loc = record.location
    line = max(loc.line, 1)
    col = max(loc.col, 0)
    end_line = loc.end_line if loc.end_line is not None else line
    end_col = loc.end_col if loc.end_col is not None else col
    if end_line < line or (end_line == line and end_col < col):
        return line, col
    return end_line, max(end_col, 0)


def format_value(value: Any) -> str:
    """A record's ``expected``/``actual`` for people: floats to 4 significant digits, a dict
    as ``key=value, ...``, a list as ``[a, b]``, strings (``nan`` too) without quotes."""
    value = jsonable(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={format_value(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


def jsonable(value: Any) -> Any:
    """Turn an ``expected``/``actual`` payload into strict JSON data.

    Non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"`` (strict JSON has
    no literal for them); numpy scalars and arrays go through ``tolist()``; tuples and sets
    become lists; anything else unknown becomes its ``str``.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Enum):
        return jsonable(value.value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return sorted(items, key=repr)
    tolist = getattr(value, "tolist", None)  # numpy scalar or array
    if callable(tolist):
        return jsonable(tolist())
    return str(value)


def strict_json(value: Any, **dumps_options: Any) -> str:
    """``value`` as strict JSON text (`jsonable` first: no ``NaN``/``Infinity`` literals, which
    ``JSON.parse`` and other strict parsers reject)."""
    import json

    return json.dumps(jsonable(value), allow_nan=False, **dumps_options)


STAGE_DESCRIPTIONS: dict[Stage, str] = {
    Stage.SYNTAX: "The file could not be parsed",
    Stage.CONSTRAINT: "A kernel violates a static constraint",
    Stage.COMPILE: "Warp code generation or compilation failed",
    Stage.CRASH: "The kernel crashed at run time",
    Stage.TIMEOUT: "The kernel did not finish in time",
    Stage.NUMERIC: "The kernel's output differs from its reference",
    Stage.PERFORMANCE: "The kernel misses its performance target",
    Stage.INTERNAL: "warp-harness failed internally",
}


def rule_title(rule: str) -> str:
    """``compile-error`` -> ``CompileError`` (a SARIF-style name for ad-hoc rule ids)."""
    parts = [p for p in rule.replace("_", "-").replace(" ", "-").split("-") if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or rule


def position(record_location: Any) -> str:
    """``line:col`` of a location (1-based column), ``cell N:line:col`` in a notebook."""
    line = max(record_location.line, 1)
    col = max(record_location.col, 0) + 1
    cell = getattr(record_location, "cell", None)
    return f"cell {cell}:{line}:{col}" if cell is not None else f"{line}:{col}"
