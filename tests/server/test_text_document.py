"""`LspTextDocument`: incremental changes give pygls' own result, and lines cut at LSP's line ends only."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import TextDocument

from warp_harness.server.text_document import LspTextDocument, lsp_lines

# line ends that join across a change's seams (\r then \n), odd separators pygls would split at
_PIECES = ["a", "é", "𝔵", " ", "\n", "\r", "\r\n", "\x0c", "\u2028", "x = 1\n"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=12).map("".join)


class _PyglsChange(TextDocument):
    """The reference: pygls' change, over lines cut the LSP way (what the server used before)."""

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(lsp_lines(self.source))


def _position(draw: st.DrawFn, lines: int) -> types.Position:
    return types.Position(draw(st.integers(0, lines + 1)), draw(st.integers(0, 6)))


@st.composite
def _changes(draw: st.DrawFn) -> tuple[str, list[types.TextDocumentContentChangePartial]]:
    text = draw(_TEXT)
    changes = []
    for _ in range(draw(st.integers(1, 6))):
        start = _position(draw, text.count("\n") + 2)
        end = _position(draw, text.count("\n") + 2)
        if draw(st.booleans()) and (end.line, end.character) < (start.line, start.character):
            start, end = end, start
        changes.append(types.TextDocumentContentChangePartial(types.Range(start, end), draw(_TEXT)))
    return text, changes


@settings(max_examples=400, deadline=None)
@given(_changes())
def test_changes_give_pygls_result_and_lsp_lines(
    case: tuple[str, list[types.TextDocumentContentChangePartial]],
) -> None:
    text, changes = case
    sync = types.TextDocumentSyncKind.Incremental
    fast = LspTextDocument("file:///k.py", text, sync_kind=sync)
    reference = _PyglsChange("file:///k.py", text, sync_kind=sync)
    for change in changes:
        fast.apply_change(change)
        reference.apply_change(change)
        assert fast.source == reference.source
        assert fast.lines == tuple(lsp_lines(fast.source))


def test_lines_are_cut_at_lsp_line_ends_only() -> None:
    document = LspTextDocument("file:///k.py", "a\x0cb\r\nc\u2028d\re")
    assert document.lines == ("a\x0cb\r\n", "c\u2028d\r", "e")
