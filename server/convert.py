"""Records <-> LSP: ranges, diagnostics, text edits.

Records count lines from 1 and columns in characters (code points); LSP counts lines from 0
and columns in the negotiated position encoding (UTF-16 unless the client asked otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from warp_harness.record import Record, Severity, TextEdit

STATIC_SOURCE = "warp-harness"
DAEMON_SOURCE = "warp-harness daemon"
TUNE_SOURCE = "warp-harness tune"

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}


class PositionMapper:
    """Converts record positions to client positions for one version of a document's text."""

    def __init__(self, lines: Sequence[str], encoding: str | None) -> None:
        self.lines = lines
        self.encoding = encoding or types.PositionEncodingKind.Utf16

    def _units(self, text: str) -> int:
        if text.isascii() or self.encoding == types.PositionEncodingKind.Utf32:
            return len(text)
        if self.encoding == types.PositionEncodingKind.Utf8:
            return len(text.encode("utf-8"))
        return len(text.encode("utf-16-le")) // 2

    def position(self, line: int, col: int) -> types.Position:
        """A record position (1-based line, character column), clamped into the document."""
        index = line - 1
        if index < 0:
            return types.Position(0, 0)
        if index >= len(self.lines):
            if not self.lines:
                return types.Position(0, 0)
            last = self.lines[-1].rstrip("\r\n")
            return types.Position(len(self.lines) - 1, self._units(last))
        text = self.lines[index].rstrip("\r\n")
        col = max(0, min(col, len(text)))
        return types.Position(index, self._units(text[:col]))

    def range(self, line: int, col: int, end_line: int | None, end_col: int | None) -> types.Range:
        start = self.position(line, col)
        end = self.position(
            end_line if end_line is not None else line, end_col if end_col is not None else col
        )
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return types.Range(start, end)

    def server_column(self, line: int, character: int) -> int:
        """A client column on a 0-based line back to a character column."""
        if line < 0 or line >= len(self.lines):
            return 0
        text = self.lines[line].rstrip("\r\n")
        if text.isascii() or self.encoding == types.PositionEncodingKind.Utf32:
            return min(character, len(text))
        units = 0
        for index, char in enumerate(text):
            if units >= character:
                return index
            units += self._units(char)
        return len(text)

    def text_edit(self, edit: TextEdit) -> types.TextEdit:
        return types.TextEdit(self.range(edit.line, edit.col, edit.end_line, edit.end_col), edit.new_text)


def uri_for(path: str) -> str:
    return from_fs_path(str(Path(path).resolve())) or path


@cache
def _rule_urls() -> dict[str, str]:
    from warp_harness.daemon.findings import DYNAMIC_RULES
    from warp_harness.rules import rule_classes

    return {cls.id: cls.url() for cls in rule_classes()} | {r.id: r.url for r in DYNAMIC_RULES}


def rule_url(rule: str) -> str | None:
    """Where a rule is documented: its section of docs/rules.md (both tiers' rules are there)."""
    return _rule_urls().get(rule)


def json_safe(value: Any) -> Any:
    """``value`` with anything JSON cannot carry (tuples aside) turned into its text."""
    kind = type(value)  # exact types first: a record's dict is mostly these (~40% of a conversion)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): json_safe(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return str(value)


def to_diagnostic(
    record: Record, mapper: PositionMapper, uri: str, *, dynamic: bool = False, source: str | None = None
) -> types.Diagnostic:
    loc = record.location
    message = record.message
    if record.hint:
        message = f"{message}\nhint: {record.hint}"
    url = rule_url(record.rule)
    data: dict[str, Any] = json_safe(record.to_dict())
    data["tier"] = "dynamic" if dynamic else "static"
    related = []
    for r in record.related:
        rl = r.location
        if rl.path == loc.path:
            where = types.Location(uri, mapper.range(rl.line, rl.col, rl.end_line, rl.end_col))
        else:  # another file: its text is not at hand, columns are passed through
            end_line = rl.end_line if rl.end_line is not None else rl.line
            end_col = rl.end_col if rl.end_col is not None else rl.col
            where = types.Location(
                uri_for(rl.path),
                types.Range(
                    types.Position(max(rl.line - 1, 0), rl.col), types.Position(max(end_line - 1, 0), end_col)
                ),
            )
        related.append(types.DiagnosticRelatedInformation(location=where, message=r.message))
    return types.Diagnostic(
        range=mapper.range(loc.line, loc.col, loc.end_line, loc.end_col),
        message=message,
        severity=_SEVERITY[record.severity],
        code=record.rule,
        code_description=types.CodeDescription(href=url) if url else None,
        source=source or (DAEMON_SOURCE if dynamic else STATIC_SOURCE),
        data=data,
        related_information=related or None,
    )


def _lines_of(record: Record) -> tuple[int, ...]:
    """The 0-based indexes (in order) of the lines whose text the record's diagnostic positions depend on
    (UTF-8/16 columns, columns clamped to the line; a line before the first maps to (0, 0) whatever the
    text)."""
    loc = record.location
    found = [loc.line] if loc.end_line is None else [loc.line, loc.end_line]
    for r in record.related:
        rl = r.location
        if rl.path == loc.path:
            found.append(rl.line)
            if rl.end_line is not None:
                found.append(rl.end_line)
    return tuple(sorted({line - 1 for line in found if line >= 1}))


# a converted record: the record (held: its id is not reused meanwhile), the URI and position encoding,
# the (0-based index, text) of each line its positions point into, its diagnostic
_Entry = tuple[Record, tuple[str, str], tuple[tuple[int, str], ...], types.Diagnostic]


class DiagnosticCache:
    """One document's diagnostics by record identity: a record the analyser handed back again (the same
    object: it did not move) converts to the diagnostic of last time, as long as the position encoding,
    the URI and the texts of the lines it points into are the same (UTF-8/16 columns depend on them).
    Each entry holds its record, so its id is not reused while it is kept."""

    def __init__(self) -> None:
        # per kind of diagnostics (dynamic, source): id(record) -> an entry, `_Entry`
        self._kinds: dict[tuple[bool, str | None], dict[int, _Entry]] = {}
        self._retired: list[Any] = []

    def convert(
        self,
        records: Sequence[Record],
        mapper: PositionMapper,
        uri: str,
        *,
        dynamic: bool = False,
        source: str | None = None,
    ) -> list[types.Diagnostic]:
        """``to_diagnostic`` of each record; only the records converted now are kept for next time."""
        kind = (dynamic, source)
        known = self._kinds.get(kind, {})
        kept: dict[int, _Entry] = {}
        diagnostics = []
        lines, count, context = mapper.lines, len(mapper.lines), (uri, mapper.encoding)
        for record in records:
            entry = known.get(id(record))
            if entry is not None and entry[0] is record and entry[1] == context:
                for index, text in entry[2]:  # the lines it points into: the same texts?
                    if index >= count or lines[index] != text:
                        break
                else:
                    kept[id(record)] = entry
                    diagnostics.append(entry[3])
                    continue
                indexes = tuple(index for index, _ in entry[2])
            else:
                indexes = _lines_of(record)
            diagnostic = to_diagnostic(record, mapper, uri, dynamic=dynamic, source=source)
            if indexes[-1:] < (count,):  # kept unless past the end (clamped: the line count counts too)
                texts = tuple((index, lines[index]) for index in indexes)
                kept[id(record)] = (record, context, texts, diagnostic)
            diagnostics.append(diagnostic)
        self._retired.append(known)
        self._kinds[kind] = kept
        return diagnostics

    def retired(self) -> list[Any]:
        """What the conversions since the last call replaced (to be freed off a keystroke's path)."""
        retired, self._retired = self._retired, []
        return retired
