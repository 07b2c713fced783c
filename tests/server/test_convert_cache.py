"""`DiagnosticCache`: a record the analyser hands back again converts to the diagnostic of last time,
unless the text of a line it points into changed (UTF-16 columns depend on it); the server's published
diagnostics stay those of a fresh conversion."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsp_helpers import Document
from lsprotocol import types
from pytest_lsp import LanguageClient

from warp_harness.record import Location, Record, Related, Severity, Stage
from warp_harness.server.convert import DiagnosticCache, PositionMapper, to_diagnostic
from warp_harness.server.text_document import lsp_lines

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
URI = "file:///k.py"


def _record(line: int, col: int, related_line: int | None = None) -> Record:
    related = () if related_line is None else (Related(Location("/k.py", related_line, 4, None, 8), "there"),)
    return Record(
        Stage.CONSTRAINT,
        "WH007",
        Severity.WARNING,
        Location("/k.py", line, col, line, col + 3),
        "m",
        related=related,
    )


def _mapper(text: str) -> PositionMapper:
    return PositionMapper(lsp_lines(text), types.PositionEncodingKind.Utf16)


def test_a_record_handed_back_reuses_its_diagnostic_while_its_lines_are_the_same() -> None:
    cache = DiagnosticCache()
    record, other = _record(2, 8), _record(3, 4, related_line=1)
    text = "a = 1\n    x = yyy\n    zz\n"
    first = cache.convert([record, other], _mapper(text), URI)
    # a line above changed (same count of lines): the records' own lines did not
    again = cache.convert([record, other], _mapper("a = 22\n    x = yyy\n    zz\n"), URI)
    assert again[0] is first[0]
    assert again[1] is not first[1]  # its related information points at line 1, which changed
    assert again[1] == to_diagnostic(other, _mapper("a = 22\n    x = yyy\n    zz\n"), URI)


def test_non_ascii_text_before_the_column_converts_afresh() -> None:
    cache = DiagnosticCache()
    record = _record(1, 8)
    first = cache.convert([record], _mapper("    x = yyy\n"), URI)
    assert first[0].range.start.character == 8
    changed = _mapper("   😀 = yyy\n")  # same characters before the column, one more UTF-16 unit
    again = cache.convert([record], changed, URI)
    assert again[0] is not first[0] and again[0] == to_diagnostic(record, changed, URI)
    assert again[0].range.start.character == 9


def test_the_kind_uri_and_encoding_are_part_of_the_key() -> None:
    cache = DiagnosticCache()
    record = _record(1, 0)
    mapper = _mapper("yyy\n")
    static = cache.convert([record], mapper, URI)[0]
    dynamic = cache.convert([record], mapper, URI, dynamic=True)[0]
    assert dynamic.source != static.source
    assert cache.convert([record], mapper, URI)[0] is static
    assert cache.convert([record], mapper, "file:///other.py")[0] is not static
    utf8 = PositionMapper(lsp_lines("yyy\n"), types.PositionEncodingKind.Utf8)
    assert cache.convert([record], utf8, "file:///other.py")[0] == to_diagnostic(
        record, utf8, "file:///other.py"
    )


def test_what_a_conversion_replaced_is_retired_not_freed() -> None:
    cache = DiagnosticCache()
    mapper = _mapper("yyy\n")
    gone = _record(1, 0)
    cache.convert([gone], mapper, URI)
    cache.retired()
    cache.convert([_record(1, 1)], mapper, URI)
    retired = cache.retired()
    assert any(entry[0] is gone for held in retired for entry in held.values())
    assert cache.retired() == []


def _fresh(text: str, path: Path, uri: str) -> list[types.Diagnostic]:
    from warp_harness.engine import analyse_source

    mapper = _mapper(text)
    return [to_diagnostic(r, mapper, uri) for r in analyse_source(text, str(path)).records]


def _plain(diagnostics: list[types.Diagnostic]) -> list[tuple[object, ...]]:
    return [
        (d.range, d.message, d.code, d.severity, d.source, d.data, list(d.related_information or []))
        for d in diagnostics
    ]


async def test_published_diagnostics_after_edits_above_records_are_a_fresh_servers(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "launches.py"
    shutil.copy(EXAMPLES / "buggy" / "launches.py", path)
    doc = Document(client, path).open()
    assert _plain(await doc.diagnostics()) == _plain(_fresh(doc.text, path, doc.uri))
    edits = [
        (32, 90, 32, 90, " é😀"),  # non-ASCII after a record's columns, on its line
        (0, 0, 0, 0, "# ünïcode 😀 above everything\n"),  # every line moves
        (31, 4, 31, 4, "_ = 'ä😀'; "),  # non-ASCII before a record's column, on its line
        (21, 21, 21, 21, "  # ñ"),  # in a kernel above the launches: they do not move
        (21, 21, 21, 25, ""),
        (25, 0, 25, 0, "    ß = '😀'\n"),  # in the host function, above the launches
    ]
    for line, col, end_line, end_col, new_text in edits:
        doc.replace(line, col, end_line, end_col, new_text)
        assert _plain(await doc.diagnostics()) == _plain(_fresh(doc.text, path, doc.uri)), new_text
