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

from pygls.workspace import TextDocument, Workspace

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lsp_lines(text: str) -> list[str]:
    """``text`` cut after each \\r\\n, \\r or \\n (line ends kept)."""
    return _LINE.findall(text)


class LspTextDocument(TextDocument):
    @property
    def lines(self) -> Sequence[str]:
        return tuple(lsp_lines(self.source))


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
