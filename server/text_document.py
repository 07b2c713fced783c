"""Documents split into lines the way LSP (and Python's tokenizer) do: at \\r\\n, \\r and \\n only.

pygls splits with `str.splitlines`, which also breaks at \\x0b, \\x0c, \\x1c-\\x1e, \\x85,
\\u2028 and \\u2029. A client that types one of those (a form feed, a pasted line separator)
counts one line where pygls counts two, and every later incremental change lands on the
wrong line: the server's copy of the document silently diverges from the editor's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lsp_lines(text: str) -> list[str]:
    """``text`` cut after each \\r\\n, \\r or \\n (line ends kept)."""
    return _LINE.findall(text)


class LspTextDocument(TextDocument):
    """Lines kept with the text they were cut from; an incremental change re-cuts only the lines it
    touches (pygls splits the whole document, twice, for every keystroke)."""

    _cut: tuple[str, tuple[str, ...]] | None = None  # (source, its lines)

    @property
    def lines(self) -> Sequence[str]:
        source = self.source
        cut = self._cut
        if cut is not None and cut[0] is source:
            return cut[1]
        lines = tuple(lsp_lines(source))
        self._cut = (source, lines)
        return lines

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        """pygls' own change (the text before the range's start, the new text, the text after its end),
        built from the lines around the range."""
        lines = self.lines
        range_ = self._position_codec.range_from_client_units(lines, change.range)
        start, end = range_.start, range_.end
        if not start.line < len(lines) or end.line < start.line:
            super()._apply_incremental_change(change)  # at the very end, or a reversed range
            return
        tail = lines[end.line][end.character :] if end.line < len(lines) else ""
        middle = lines[start.line][: start.character] + change.text + tail
        before, after = lines[: start.line], lines[end.line + 1 :]
        source = "".join((*before, middle, *after))
        self._source = source
        # the lines cut from the middle alone are the document's unless a line end joins across a seam
        joins_before = bool(before) and before[-1].endswith("\r") and middle.startswith("\n")
        open_end = bool(after) and (
            not middle
            or not middle.endswith(("\n", "\r"))
            or (middle.endswith("\r") and after[0].startswith("\n"))
        )
        if not joins_before and not open_end:
            self._cut = (source, (*before, *lsp_lines(middle), *after))


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
