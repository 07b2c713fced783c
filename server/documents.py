"""One object per document the server knows: what was analysed, what was published, its debounce, its
notebook cells and the daemon's last result for it.

An open text document or notebook has its ``Document`` from ``didOpen`` to ``didClose``; a file the
editor has not opened has one while the daemon has a result for it (keyed by its canonical URI, the
resolved path's: the daemon names files by path). The live text stays pygls's (``server.workspace``);
a ``Document`` holds what the server made of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from warp_harness.record import Record
from warp_harness.server.convert import DiagnosticCache

if TYPE_CHECKING:
    from warp_harness.config import Settings
    from warp_harness.engine import Analysis
    from warp_harness.server.notebooks import NotebookState


@dataclass(eq=False, repr=False)
class StaticState:
    """A document's last static analysis and the text and version it is for."""

    version: int | None
    text: str
    analysis: Analysis


@dataclass(eq=False, repr=False)
class DynamicState:
    """A file's last daemon result: dynamic-tier records, per-kernel verdicts, its status, when it came,
    and the failure-library case files (absolute) the result listed."""

    records: list[Record]
    kernels: dict[str, Any]
    status: str
    received: float
    cases: list[str] = field(default_factory=list)


# a published diagnostic: its record, the diagnostic, and whether the record is the static tier's
Published = tuple[Record, types.Diagnostic, bool]


@dataclass(eq=False, repr=False)
class Document:
    """Everything the server keeps for one document (a text file, a notebook, or a closed file with a
    daemon result)."""

    uri: str
    notebook: bool = False
    is_open: bool = False
    static: StaticState | None = None  # the last analysis published (text documents)
    settings: Settings | None = None  # the settings that analysis used
    from_start_up: StaticState | None = None  # set while the published one is the start-up process's
    cells: NotebookState | None = None  # the last analysis published (notebooks)
    daemon: DynamicState | None = None  # the daemon's last result, on the file's canonical URI
    published: list[Published] | None = None  # None: nothing published yet
    converted: DiagnosticCache = field(default_factory=DiagnosticCache)  # diagnostics by record identity
    pending: asyncio.TimerHandle | None = None  # the debounced analysis
    last_change: float = float("-inf")
    propagated: str | None = None  # the text whose change was last passed on to its dependents

    def cancel_pending(self) -> bool:
        """Drop the debounced analysis; whether there was one."""
        handle, self.pending = self.pending, None
        if handle is None:
            return False
        handle.cancel()
        return True

    def forget_analysis(self) -> None:
        """The next analysis starts afresh (the settings, or a module it depends on, changed)."""
        self.static = None
        self.settings = None

    def close(self) -> None:
        """What an editor's ``didClose`` ends: everything but the daemon's result."""
        self.cancel_pending()
        self.is_open = False
        self.static = self.from_start_up = self.cells = self.settings = None
        self.published = None
        self.converted = DiagnosticCache()
        self.last_change = float("-inf")
        self.propagated = None


def notebook_path(uri: str) -> str | None:
    """The file a notebook's URI names: ``file:`` URIs as usual; a remote editor's URI (code-server
    names an open notebook ``vscode-remote://host:port/path``) by its path, which is the file's path
    on the machine the server runs on (settings are looked up from there; nothing is read)."""
    path = to_fs_path(uri)
    if path is not None:
        return path
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme and parsed.path.startswith("/") else None


def canonical_uri(path: str) -> str:
    """The URI the daemon's results for ``path`` are kept (and published) under."""
    resolved = str(Path(path).resolve())
    return from_fs_path(resolved) or resolved


class Documents:
    """The server's documents by URI."""

    def __init__(self) -> None:
        self._by_uri: dict[str, Document] = {}

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._by_uri.values()))

    def get(self, uri: str) -> Document | None:
        return self._by_uri.get(uri)

    def opened(self, uri: str, *, notebook: bool = False) -> Document:
        """``didOpen``: a fresh analysis state (a daemon result kept from before stays)."""
        document = self._by_uri.get(uri)
        if document is None:
            document = self._by_uri[uri] = Document(uri, notebook=notebook)
        else:
            document.close()
            document.notebook = notebook
        document.is_open = True
        return document

    def for_uri(self, uri: str) -> Document:
        """The document of ``uri``, made when there is none (an analysis asked for before ``didOpen``)."""
        document = self._by_uri.get(uri)
        if document is None:
            document = self._by_uri[uri] = Document(uri, is_open=True)
        return document

    def closed(self, uri: str) -> Document | None:
        """``didClose``: the document's state goes, unless the daemon's result for it is kept."""
        document = self._by_uri.get(uri)
        if document is None:
            return None
        document.close()
        if document.daemon is None:
            del self._by_uri[uri]
        return document

    def daemon_state(self, uri: str) -> DynamicState | None:
        """The daemon's last result for the file ``uri`` names (kept under its canonical URI)."""
        path = to_fs_path(uri)
        if path is None:
            return None
        found = self._by_uri.get(canonical_uri(path))
        return found.daemon if found is not None else None

    def set_daemon_state(self, path: str, state: DynamicState | None) -> str | None:
        """Keep (None: drop) the daemon's result for ``path``; the canonical URI when it changed."""
        uri = canonical_uri(path)
        document = self._by_uri.get(uri)
        if state is None:
            if document is None or document.daemon is None:
                return None
            document.daemon = None
            if not document.is_open:
                del self._by_uri[uri]
            return uri
        if document is None:
            document = self._by_uri[uri] = Document(uri)
        document.daemon = state
        return uri


__all__ = [
    "Document",
    "Documents",
    "DynamicState",
    "Published",
    "StaticState",
    "canonical_uri",
    "notebook_path",
]
