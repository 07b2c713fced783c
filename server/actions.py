"""Code actions: a rule's fix, "suppress on this line", and fix-all for the whole file."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from lsprotocol import types

from warp_harness.fixes import compatible_fix_edits
from warp_harness.record import Record, TextEdit
from warp_harness.server.convert import PositionMapper

FIX_ALL_KIND = "source.fixAll.warp-harness"
_IGNORE_LIST = re.compile(r"#\s*wh:\s*ignore\[([A-Za-z0-9_,\s]*)\]")
_BARE_IGNORE = re.compile(r"#\s*wh:\s*ignore(?![\[\-])")


def _workspace_edit(uri: str, version: int | None, edits: Sequence[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=list(edits),
            )
        ]
    )


def fix_action(
    record: Record, diagnostic: types.Diagnostic, mapper: PositionMapper, uri: str, version: int | None
) -> types.CodeAction | None:
    if record.fix is None or not record.fix.edits:
        return None
    return types.CodeAction(
        title=f"{record.fix.title} ({record.rule})",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        is_preferred=record.fix.safe,
        edit=_workspace_edit(uri, version, [mapper.text_edit(e) for e in record.fix.edits]),
    )


def suppression_edit(lines: Sequence[str], record: Record) -> TextEdit | None:
    """The edit that adds ``# wh: ignore[RULE]`` to the record's line (None where a comment can't go)."""
    index = record.location.line - 1
    if not 0 <= index < len(lines):
        return None
    line = lines[index].rstrip("\r\n")
    if line.rstrip().endswith("\\") or _BARE_IGNORE.search(line):
        return None  # a continuation line takes no comment; a bare ignore already silences all
    existing = _IGNORE_LIST.search(line)
    if existing:
        codes = [c.strip() for c in existing.group(1).split(",") if c.strip()]
        if record.rule in codes:
            return None
        start, end = existing.span(1)
        return TextEdit(
            record.location.line, start, record.location.line, end, ", ".join([*codes, record.rule])
        )
    stripped = len(line.rstrip())
    return TextEdit(
        record.location.line, stripped, record.location.line, len(line), f"  # wh: ignore[{record.rule}]"
    )


def suppress_action(
    record: Record,
    diagnostic: types.Diagnostic,
    lines: Sequence[str],
    mapper: PositionMapper,
    uri: str,
    version: int | None,
) -> types.CodeAction | None:
    edit = suppression_edit(lines, record)
    if edit is None:
        return None
    return types.CodeAction(
        title=f"Suppress {record.rule} on this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        edit=_workspace_edit(uri, version, [mapper.text_edit(edit)]),
    )


def fix_all_action(
    text: str, records: Iterable[Record], mapper: PositionMapper, uri: str, version: int | None
) -> types.CodeAction | None:
    edits, count = compatible_fix_edits(text, records, safe_only=True)
    if not count:
        return None
    return types.CodeAction(
        title=f"warp-harness: fix all ({count} safe fix{'es' if count != 1 else ''})",
        kind=FIX_ALL_KIND,
        edit=_workspace_edit(uri, version, [mapper.text_edit(e) for e in edits]),
    )
