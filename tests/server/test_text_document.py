"""`LspTextDocument`: incremental changes give pygls' own result, and lines cut at LSP's line ends only."""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import TextDocument

from warp_harness.server import lines as lines_module
from warp_harness.server.lines import Lines
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


@settings(max_examples=300, deadline=None)
@given(_changes())
def test_changes_across_blocks_give_pygls_result(
    case: tuple[str, list[types.TextDocumentContentChangePartial]],
) -> None:
    """The same with blocks of one line: every edit spans, merges and splits blocks."""
    text, changes = case
    sync = types.TextDocumentSyncKind.Incremental
    with patch.object(lines_module, "BLOCK", 1):
        fast = LspTextDocument("file:///k.py", text, sync_kind=sync)
        reference = _PyglsChange("file:///k.py", text, sync_kind=sync)
        for change in changes:
            fast.apply_change(change)
            reference.apply_change(change)
            expected = tuple(lsp_lines(reference.source))
            assert fast.lines == expected
            assert [fast.lines[n] for n in range(-len(expected), len(expected))] == [*expected, *expected]
            assert fast.source == reference.source


@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), st.integers(-3, 40), st.integers(-3, 40))
def test_lines_slice_like_a_tuple(text: str, start: int, stop: int) -> None:
    with patch.object(lines_module, "BLOCK", 2):
        lines = Lines.cut(text)
    expected = tuple(lsp_lines(text))
    assert lines[start:stop] == expected[start:stop]
    assert lines[::2] == expected[::2]
    assert len(lines) == len(expected) and tuple(lines) == expected


def test_lsp_lines_match_the_pattern_on_either_path() -> None:
    """Without the odd separators `str.splitlines` is used: the same cut as the pattern."""
    for text in ["", "a", "a\n", "\n\n", "a\r\nb\rc\nd", "\r\r\n\n", "x\x0cy\n", "é\u2028\r"]:
        assert lsp_lines(text) == lines_module._LINE.findall(text)
