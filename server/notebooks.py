"""Notebooks in the language server: LSP 3.17 notebook document sync, diagnostics and code
actions per cell, fix-all across the notebook.

pygls keeps the notebook and its cells' text documents up to date (``notebookDocument/didOpen``,
``didChange``, ``didSave``, ``didClose``); this module analyses the notebook's Python code cells
as one module (``warp_harness.notebooks``: the same joining and IPython masking as ``check``),
through the server's own analyser (incremental: an edit in one cell re-judges only what changed),
and files each record under its cell's document. Diagnostics then go out per cell: pushed, or kept
for a client that pulls (``server/pull.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.uris import to_fs_path

from warp_harness.record import Record
from warp_harness.server import actions, pull
from warp_harness.server.convert import PositionMapper, to_diagnostic
from warp_harness.server.text_document import lsp_lines

if TYPE_CHECKING:
    from warp_harness.engine import Analysis
    from warp_harness.notebooks import Joined
    from warp_harness.server.app import WarpHarnessServer

log = logging.getLogger("warp_harness.server.notebooks")

# Jupyter notebooks (VS Code's "jupyter-notebook" type, any other client's "*.ipynb"); Python cells
SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook=types.NotebookDocumentFilterPattern(pattern="**/*.ipynb"),
            cells=[types.NotebookCellLanguage(language="python")],
        ),
        types.NotebookDocumentFilterWithCells(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        ),
    ],
    save=True,
)
LEADING_EDGE_S = 0.002


def notebook_path(uri: str) -> str | None:
    """The file a notebook's URI names: ``file:`` URIs as usual; a remote editor's URI (code-server
    names an open notebook ``vscode-remote://host:port/path``) by its path, which is the file's path
    on the machine the server runs on (settings are looked up from there; nothing is read)."""
    path = to_fs_path(uri)
    if path is not None:
        return path
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme and parsed.path.startswith("/") else None


# no code of fewer characters (4 UTF-8 bytes at most each) is over the size cap, 8 MiB
_MAY_BE_TOO_LARGE_CHARS = 2 * 1024 * 1024


def _too_large(cells: list[tuple[int, str]], path: str) -> Analysis | None:
    """Code cells over the size cap `check` applies to files, together: one record on the largest
    cell instead of an analysis (it needs no joined module to be placed). None when under it."""
    if sum(len(text) for _, text in cells) <= _MAY_BE_TOO_LARGE_CHARS:
        return None
    from warp_harness.engine import Analysis
    from warp_harness.text_cap import cells_too_large

    record = cells_too_large(cells, path)
    return None if record is None else Analysis([record], None, None)


@dataclass(eq=False, repr=False)
class CellResult:
    """A notebook cell's last records and the diagnostics published for them."""

    uri: str
    version: int | None
    text: str
    records: list[Record]
    pairs: list[tuple[Record, types.Diagnostic]]


@dataclass(eq=False, repr=False)
class NotebookState:
    """A notebook's last analysis: the joined code cells and each cell's result."""

    version: int
    joined: Joined
    cells: dict[str, CellResult] = field(default_factory=dict)
    texts: tuple[str, ...] = ()


class NotebookSupport:
    """The server's notebooks: their last analysis, per cell, and the debounce of their edits."""

    def __init__(self, server: WarpHarnessServer) -> None:
        self.server = server
        self.states: dict[str, NotebookState] = {}
        self.pending: dict[str, Any] = {}
        self.last_change: dict[str, float] = {}
        self.analyses = 0

    # -------------------------------------------------------------- lookups

    def notebook_of(self, cell_uri: str) -> types.NotebookDocument | None:
        try:
            return self.server.workspace.get_notebook_document(cell_uri=cell_uri)
        except Exception:  # before initialize
            return None

    def owns_cell(self, uri: str) -> bool:
        return self.notebook_of(uri) is not None

    def _code_cells(self, notebook: types.NotebookDocument) -> list[tuple[int, str, str, int | None]]:
        """(cell number, uri, text, version) of the notebook's Python code cells."""
        cells = []
        for number, cell in enumerate(notebook.cells, 1):
            if cell.kind != types.NotebookCellKind.Code:
                continue
            # pygls keys its documents by the unquoted URI (VS Code's cell URIs end in `%3D%3D`)
            document = self.server.workspace.text_documents.get(unquote(cell.document))
            if document is None:
                continue
            language = document.language_id
            if language not in (None, "python"):
                continue
            cells.append((number, cell.document, document.source, document.version))
        return cells

    # -------------------------------------------------------------- analysis

    def request(self, notebook_uri: str, force: bool = False) -> asyncio.Future[Any] | None:
        """Hand the notebook's code, joined, to the analysis thread (server/worker.py) unless its last
        analysis, done or running, is of this code; the running analysis, None when it is done. The
        cells' diagnostics go out from the event loop when it finishes, if the notebook is unchanged."""
        handle = self.pending.pop(notebook_uri, None)
        if handle is not None:
            handle.cancel()
        notebook = self.server.workspace.get_notebook_document(notebook_uri=notebook_uri)
        path = notebook_path(notebook_uri)
        loop = self.server.loop
        if notebook is None or path is None or loop is None:
            log.warning("notebook %s: %s", notebook_uri, "not open" if notebook is None else "no path")
            return None
        cells = self._code_cells(notebook)
        texts = tuple(text for _, _, text, _ in cells)
        current = self.states.get(notebook_uri)
        if (
            not force
            and current is not None
            and current.version == notebook.version
            and current.texts == texts
        ):
            return None
        from warp_harness.notebooks import join_cells  # imported by the first notebook only

        too_large = _too_large([(number, text) for number, _, text, _ in cells], path)
        # over the size cap: not even joined (masking 11 MiB of cells line by line takes seconds)
        joined = join_cells([] if too_large else [(number, text) for number, _, text, _ in cells])
        tier = self.server.tier
        version = notebook.version
        collector = self.server.collector
        current_job = self.server.worker.jobs.get(notebook_uri)

        def analyse() -> Analysis:
            if too_large is not None:
                return too_large
            collector.pause()  # until the diagnostics are out (server/collector.py), as for text documents
            return tier.analyse(joined.text, path)

        job = self.server.worker.submit(
            loop,
            notebook_uri,
            (version, texts),
            analyse,
            lambda analysis: self._analysed(notebook_uri, path, version, cells, joined, analysis),
            reuse=not force,
        )
        if job is not current_job:  # a new analysis: the collector runs once it is out
            job.future.add_done_callback(lambda _: self.server.worker.call_soon(collector.after_analysis))
        return None if job.future.done() else job.future

    async def settled(self, notebook_uri: str) -> NotebookState | None:
        """The notebook's last completed analysis, after waiting a while for the one of its code now."""
        from warp_harness.server.app import REQUEST_BUDGET_S
        from warp_harness.server.worker import settled_within

        await settled_within(self.request(notebook_uri), REQUEST_BUDGET_S)
        return self.states.get(notebook_uri)

    def _analysed(
        self,
        notebook_uri: str,
        path: str,
        version: int,
        cells: list[tuple[int, str, str, int | None]],
        joined: Joined,
        analysis: Analysis,
    ) -> None:
        notebook = self.server.workspace.get_notebook_document(notebook_uri=notebook_uri)
        if notebook is None or notebook.version != version:
            return  # closed, or changed since: the analysis of the newer code follows
        self.analyses += 1
        sources = {number: text for number, _, text, _ in cells}
        from warp_harness.notebooks import place_records

        placed = place_records(analysis.records, path, joined, sources)
        state = NotebookState(version, joined, texts=tuple(text for _, _, text, _ in cells))
        encoding = self.server.workspace.position_encoding
        for number, uri, text, cell_version in cells:
            mine = [r for r in placed if r.location.cell == number]
            mapper = PositionMapper(lsp_lines(text), encoding)
            pairs = [(r, to_diagnostic(r, mapper, uri)) for r in mine]
            state.cells[unquote(uri)] = CellResult(uri, cell_version, text, mine, pairs)
        previous = self.states.get(notebook_uri)
        self.states[notebook_uri] = state
        self._publish(state, previous)

    def _publish(self, state: NotebookState, previous: NotebookState | None) -> None:
        for cell in state.cells.values():
            pull.deliver(self.server, cell.uri, [d for _, d in cell.pairs], cell.version)
        if previous is not None:  # cells gone (deleted, or no longer Python): clear what they showed
            for key in set(previous.cells) - set(state.cells):
                self.clear(previous.cells[key].uri)

    def clear(self, uri: str) -> None:
        pull.forget(self.server, uri)
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def request_for_cell(self, cell_uri: str) -> asyncio.Future[Any] | None:
        """:meth:`request` for the notebook holding ``cell_uri``."""
        notebook = self.notebook_of(cell_uri)
        return self.request(notebook.uri) if notebook is not None else None

    def schedule(self, notebook_uri: str) -> None:
        """As the text documents' debounce (server/app.py: schedule): at once after a pause."""
        loop = self.server.loop
        path = notebook_path(notebook_uri)
        if loop is None or path is None:
            return
        delay = self.server.tier.settings_for(path).debounce_ms / 1000
        now = time.monotonic()
        idle = now - self.last_change.get(notebook_uri, float("-inf")) >= delay
        self.last_change[notebook_uri] = now
        handle = self.pending.pop(notebook_uri, None)
        if handle is not None:
            handle.cancel()
        wait = LEADING_EDGE_S if idle and handle is None else delay
        self.pending[notebook_uri] = loop.call_later(wait, self._fire, notebook_uri)

    def _fire(self, notebook_uri: str, force: bool = False) -> None:
        self.pending.pop(notebook_uri, None)
        try:
            self.request(notebook_uri, force=force)
        except Exception:  # one notebook must not take the server down
            log.exception("analysis of %s failed", notebook_uri)

    def reanalyse_all(self) -> None:
        for uri in list(self.server.workspace.notebook_documents):
            path = notebook_path(uri)
            if path is not None:
                self.server.in_worker(partial(self.server.tier.forget, path))
            self._fire(uri, force=True)

    def close(self, params: types.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self.last_change.pop(uri, None)
        self.server.worker.cancel(uri)
        state = self.states.pop(uri, None)
        path = notebook_path(uri)
        if path is not None:
            self.server.in_worker(partial(self.server.tier.forget, path))
        for cell in params.cell_text_documents:
            self.clear(cell.uri)
        if state is not None:
            for key in set(state.cells) - {unquote(c.uri) for c in params.cell_text_documents}:
                self.clear(state.cells[key].uri)

    # -------------------------------------------------------------- code actions

    async def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Quick fixes and suppressions for a cell's diagnostics; fix-all over every cell."""
        uri = params.text_document.uri
        notebook = self.notebook_of(uri)
        if notebook is None:
            return []
        state = await self.settled(notebook.uri)
        cell = state.cells.get(unquote(uri)) if state is not None else None
        if state is None or cell is None:
            return []
        encoding = self.server.workspace.position_encoding
        lines = lsp_lines(cell.text)
        mapper = PositionMapper(lines, encoding)
        only = params.context.only
        wanted_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
        wanted_fix_all = not only or any(
            actions.FIX_ALL_KIND.startswith(k) or k.startswith(actions.FIX_ALL_KIND) for k in only
        )
        result: list[types.CodeAction] = []
        if wanted_quickfix:
            for diagnostic in params.context.diagnostics:
                record = next(
                    (r for r, d in cell.pairs if d.code == diagnostic.code and d.range == diagnostic.range),
                    None,
                )
                if record is None:
                    continue
                fix = actions.fix_action(record, diagnostic, mapper, uri, cell.version)
                if fix is not None:
                    result.append(fix)
                suppress = actions.suppress_action(record, diagnostic, lines, mapper, uri, cell.version)
                if suppress is not None:
                    result.append(suppress)
        if wanted_fix_all:
            fix_all = self.fix_all(state)
            if fix_all is not None:
                result.append(fix_all)
        return result

    def fix_all(self, state: NotebookState) -> types.CodeAction | None:
        """Every compatible safe fix in every cell: one edit per cell document, one action."""
        encoding = self.server.workspace.position_encoding
        changes: list[types.TextDocumentEdit] = []
        total = 0
        for cell in state.cells.values():
            from warp_harness.fixes import compatible_fix_edits

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
            kind=actions.FIX_ALL_KIND,
            edit=types.WorkspaceEdit(document_changes=list(changes)),
        )


def register(server: WarpHarnessServer) -> None:
    """The notebookDocument/* handlers (pygls has already updated its workspace when they run)."""
    support = server.notebooks

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: WarpHarnessServer, params: types.DidOpenNotebookDocumentParams) -> None:
        support.states.pop(params.notebook_document.uri, None)
        support._fire(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: WarpHarnessServer, params: types.DidChangeNotebookDocumentParams) -> None:
        support.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(ls: WarpHarnessServer, params: types.DidSaveNotebookDocumentParams) -> None:
        support._fire(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: WarpHarnessServer, params: types.DidCloseNotebookDocumentParams) -> None:
        support.close(params)


__all__ = ["SYNC", "NotebookSupport", "register"]
