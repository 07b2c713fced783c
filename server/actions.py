"""Code actions: a rule's fix, "suppress on this line", fix-all for the whole file (or notebook), and on a
replayed launch's record "accept the new behaviour" and "open the stored case" (server/replay_actions.py).

The record an action is for is read from the diagnostic's ``data`` (the record, as the server published
it); an action is offered only while the server still shows that diagnostic: one the client kept from
an older text (or made up) gets none.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warp_harness.fixes import compatible_fix_edits
from warp_harness.record import Record, TextEdit
from warp_harness.server import analyses, notebooks, replay_actions
from warp_harness.server.convert import PositionMapper
from warp_harness.server.documents import Published
from warp_harness.server.notebooks import NotebookState
from warp_harness.server.text_document import lsp_lines

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer

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


def notebook_fix_all(ls: WarpHarnessServer, state: NotebookState) -> types.CodeAction | None:
    """Every compatible safe fix in every cell: one edit per cell document, one action."""
    from warp_harness.fixes import compatible_fix_edits

    encoding = ls.workspace.position_encoding
    changes: list[types.TextDocumentEdit] = []
    total = 0
    for cell in state.cells.values():
        edits, count = compatible_fix_edits(cell.text, cell.records, safe_only=True)
        if not count:
            continue
        total += count
        mapper = PositionMapper(lsp_lines(cell.text), encoding)
        changes.append(
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=cell.uri, version=cell.version
                ),
                edits=[mapper.text_edit(e) for e in edits],
            )
        )
    if not total:
        return None
    return types.CodeAction(
        title=f"warp-harness: fix all in the notebook ({total} safe fix{'es' if total != 1 else ''})",
        kind=FIX_ALL_KIND,
        edit=types.WorkspaceEdit(document_changes=list(changes)),
    )


# ---------------------------------------------------------------------------------------- the handler

KINDS = [types.CodeActionKind.QuickFix, FIX_ALL_KIND]


@dataclass(eq=False, repr=False)
class _Target:
    """What a document's actions are made from: its analysed text's lines, the version the edits are
    for, the diagnostics published for it, and its fix-all."""

    uri: str
    lines: Sequence[str]
    mapper: PositionMapper
    version: int | None
    published: Sequence[Published]
    fix_all: Callable[[], types.CodeAction | None]


async def _target(ls: WarpHarnessServer, uri: str) -> _Target | None:
    """For the text as it is now when its analysis is quick; else the last one's, its edits marked with
    that text's version (a client applies none to a newer text)."""
    document = await analyses.settled(ls, uri)
    if document is None:
        return None
    encoding = ls.workspace.position_encoding
    if document.notebook:
        cell = notebooks.cell_result(document, uri)
        if document.cells is None or cell is None:
            return None
        lines: Sequence[str] = lsp_lines(cell.text)
        mapper = PositionMapper(lines, encoding)
        cells = document.cells
        return _Target(uri, lines, mapper, cell.version, cell.published, lambda: notebook_fix_all(ls, cells))
    state = document.static
    if state is None or ls.workspace.text_documents.get(uri) is None:
        return None
    lines = state.analysis.source.lines if state.analysis.source else state.text.splitlines()
    mapper = PositionMapper(lines, encoding)
    return _Target(
        uri,
        lines,
        mapper,
        state.version,
        document.published or [],
        lambda: fix_all_action(state.text, state.analysis.records, mapper, uri, state.version),
    )


def _identity(data: Any) -> tuple[Any, ...] | None:
    """What tells one published record from another in a diagnostic's data (rule, place, message, tier)."""
    if not isinstance(data, dict):
        return None
    return (data.get("rule"), data.get("location"), data.get("message"), data.get("tier"))


def record_of(diagnostic: types.Diagnostic, published: Sequence[Published]) -> tuple[Record, bool] | None:
    """The record a diagnostic carries in its ``data`` (and whether it is a dynamic one), when the server
    still shows that diagnostic; None for one it does not (stale, or not the server's)."""
    wanted = _identity(diagnostic.data)
    if wanted is None or not any(_identity(shown.data) == wanted for _, shown, _ in published):
        return None
    data = diagnostic.data
    assert isinstance(data, dict)  # `_identity` found one
    try:
        record = Record.from_dict(data)
    except (KeyError, ValueError, TypeError):
        return None
    return record, data.get("tier") == "dynamic"


async def code_actions(ls: WarpHarnessServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """``textDocument/codeAction`` for a text document or a notebook cell."""
    target = await _target(ls, params.text_document.uri)
    if target is None:
        return []
    only = params.context.only
    wanted_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
    wanted_fix_all = not only or any(FIX_ALL_KIND.startswith(k) or k.startswith(FIX_ALL_KIND) for k in only)
    result: list[types.CodeAction] = []
    if wanted_quickfix:
        for diagnostic in params.context.diagnostics:
            found = record_of(diagnostic, target.published)
            if found is None:
                continue
            record, dynamic = found
            fix = fix_action(record, diagnostic, target.mapper, target.uri, target.version)
            if fix is not None:
                result.append(fix)
            if dynamic:
                result.extend(replay_actions.actions(ls, target.uri, record, diagnostic))
            else:
                suppress = suppress_action(
                    record, diagnostic, target.lines, target.mapper, target.uri, target.version
                )
                if suppress is not None:
                    result.append(suppress)
    if wanted_fix_all:
        fix_all = target.fix_all()
        if fix_all is not None:
            result.append(fix_all)
    return result
