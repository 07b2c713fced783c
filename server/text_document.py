"""Documents split into lines the way LSP (and Python's tokenizer) do: at \\r\\n, \\r and \\n only.

pygls splits with `str.splitlines`, which also breaks at \\x0b, \\x0c, \\x1c-\\x1e, \\x85,
\\u2028 and \\u2029. A client that types one of those (a form feed, a pasted line separator)
counts one line where pygls counts two, and every later incremental change lands on the
wrong line: the server's copy of the document silently diverges from the editor's.

An incremental change re-cuts only the lines around it (server/lines.py keeps them in blocks), and
the document's text is joined from the lines when it is next read: a burst of keystrokes between two
analyses joins it once.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from warp_harness.server.lines import Lines, lsp_lines

__all__ = ["LspTextDocument", "LspWorkspace", "lsp_lines", "use_lsp_lines"]


class LspTextDocument(TextDocument):
    """The text as pygls keeps it (``_source``), or as lines edited since (``_lines``), joined on demand."""

    _text: str | None = None
    _lines: Lines | None = None  # its lines: cut from _text when first asked for; after an edit, the text

    @property
    def _source(self) -> str | None:
        """pygls' own field (read by ``source``; set by pygls' constructor and full changes)."""
        text = self._text
        if text is None and self._lines is not None:
            text = self._text = self._lines.text()
        return text

    @_source.setter
    def _source(self, text: str | None) -> None:
        self._text = text
        self._lines = None

    @property
    def lines(self) -> Lines:
        lines = self._lines
        if lines is None:
            source = self._text
            if source is None:  # not open: pygls reads the file at each use
                return Lines.cut(self.source)
            lines = self._lines = Lines.cut(source)
        return lines

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        """pygls' own change (the text before the range's start, the new text, the text after its end),
        made on the lines from the one before the range to the one after it: a line end joining across
        either seam (\\r, then \\n) is in what is cut again."""
        lines = self.lines
        range_ = self._position_codec.range_from_client_units(lines, change.range)
        start, end = range_.start, range_.end
        if not start.line < len(lines) or end.line < start.line:
            super()._apply_incremental_change(change)  # at the very end, or a reversed range
            return
        first, stop = max(start.line - 1, 0), min(end.line + 2, len(lines))
        text = "".join(
            (
                *lines[first : start.line],
                lines[start.line][: start.character],
                change.text,
                lines[end.line][end.character :],
                *lines[end.line + 1 : stop],
            )
        )
        self._lines = lines.replaced(first, stop, lsp_lines(text))
        self._text = None


class LspWorkspace(Workspace):
    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def use_lsp_lines(workspace: Any) -> None:
    """Make pygls' workspace (created during `initialize`) create LSP-conformant documents."""
    if isinstance(workspace, Workspace) and not isinstance(workspace, LspWorkspace):
        workspace.__class__ = LspWorkspace
