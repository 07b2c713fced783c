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

import logging
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

from warp_harness.record import Record
from warp_harness.server import publishing, pull
from warp_harness.server.convert import PositionMapper, to_diagnostic
from warp_harness.server.documents import Document, Published, notebook_path
from warp_harness.server.text_document import lsp_lines
from warp_harness.server.worker import Snapshot

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
    published: list[Published]


@dataclass(eq=False, repr=False)
class NotebookState:
    """A notebook's last analysis: the joined code cells and each cell's result (by unquoted cell URI)."""

    version: int
    joined: Joined
    cells: dict[str, CellResult] = field(default_factory=dict)
    texts: tuple[str, ...] = ()


def notebook_of(ls: WarpHarnessServer, uri: str) -> types.NotebookDocument | None:
    """The notebook ``uri`` names, or the one holding the cell it names; None for anything else."""
    try:
        workspace = ls.workspace
    except Exception:  # before initialize
        return None
    found = workspace.get_notebook_document(notebook_uri=uri)
    return found if found is not None else workspace.get_notebook_document(cell_uri=uri)


def code_cells(
    ls: WarpHarnessServer, notebook: types.NotebookDocument
) -> list[tuple[int, str, str, int | None]]:
    """(cell number, uri, text, version) of the notebook's Python code cells."""
    cells = []
    for number, cell in enumerate(notebook.cells, 1):
        if cell.kind != types.NotebookCellKind.Code:
            continue
        # pygls keys its documents by the unquoted URI (VS Code's cell URIs end in `%3D%3D`)
        document = ls.workspace.text_documents.get(unquote(cell.document))
        if document is None:
            continue
        language = document.language_id
        if language not in (None, "python"):
            continue
        cells.append((number, cell.document, document.source, document.version))
    return cells


def debounce_s(ls: WarpHarnessServer, notebook_uri: str) -> float | None:
    """The notebook's debounce delay (its settings'), None when it names no file."""
    path = notebook_path(notebook_uri)
    return None if path is None else ls.tier.settings_for(path).debounce_ms / 1000


# ---------------------------------------------------------------------------------------- analysis


def snapshot(ls: WarpHarnessServer, notebook_uri: str) -> Snapshot | None:
    """The notebook's code cells as they are now, joined, as one analysis (server/analyses.py
    ``request``): applied (each cell's diagnostics published) if the notebook is unchanged by then."""
    notebook = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    path = notebook_path(notebook_uri)
    if notebook is None or path is None:
        log.warning("notebook %s: %s", notebook_uri, "not open" if notebook is None else "no path")
        return None
    cells = code_cells(ls, notebook)
    texts = tuple(text for _, _, text, _ in cells)
    current = ls.documents.for_uri(notebook_uri).cells
    analysed = current is not None and current.version == notebook.version and current.texts == texts
    from warp_harness.notebooks import join_cells  # imported by the first notebook only

    capped = _too_large([(number, text) for number, _, text, _ in cells], path)
    # over the size cap: not even joined (masking 11 MiB of cells line by line takes seconds)
    joined = join_cells([] if capped else [(number, text) for number, _, text, _ in cells])
    tier = ls.tier
    version = notebook.version
    collector = ls.collector

    def analyse() -> Analysis:
        if capped is not None:
            return capped
        collector.pause()  # until the diagnostics are out (server/collector.py), as for text documents
        return tier.analyse(joined.text, path)

    return Snapshot(
        (version, texts),
        analysed,
        analyse,
        lambda analysis: _analysed(ls, notebook_uri, path, version, cells, joined, analysis),
    )


def _analysed(
    ls: WarpHarnessServer,
    notebook_uri: str,
    path: str,
    version: int,
    cells: list[tuple[int, str, str, int | None]],
    joined: Joined,
    analysis: Analysis,
) -> None:
    notebook = ls.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if notebook is None or notebook.version != version:
        return  # closed, or changed since: the analysis of the newer code follows
    sources = {number: text for number, _, text, _ in cells}
    from warp_harness.notebooks import place_records

    placed = place_records(analysis.records, path, joined, sources)
    state = NotebookState(version, joined, texts=tuple(text for _, _, text, _ in cells))
    encoding = ls.workspace.position_encoding
    for number, uri, text, cell_version in cells:
        mine = [r for r in placed if r.location.cell == number]
        mapper = PositionMapper(lsp_lines(text), encoding)
        published = [(r, to_diagnostic(r, mapper, uri), True) for r in mine]
        state.cells[unquote(uri)] = CellResult(uri, cell_version, text, mine, published)
    document = ls.documents.for_uri(notebook_uri)
    previous, document.cells = document.cells, state
    for cell in state.cells.values():
        pull.deliver(ls, cell.uri, [d for _, d, _ in cell.published], cell.version)
    if previous is not None:  # cells gone (deleted, or no longer Python): clear what they showed
        for key in set(previous.cells) - set(state.cells):
            publishing.clear(ls, previous.cells[key].uri)


def closed(ls: WarpHarnessServer, params: types.DidCloseNotebookDocumentParams) -> None:
    """``notebookDocument/didClose``: its state goes, its cells' diagnostics are cleared."""
    uri = params.notebook_document.uri
    document = ls.documents.get(uri)
    state = document.cells if document is not None else None
    ls.documents.closed(uri)
    ls.worker.cancel(uri)
    path = notebook_path(uri)
    if path is not None:
        ls.in_worker(partial(ls.tier.forget, path))
    for cell in params.cell_text_documents:
        publishing.clear(ls, cell.uri)
    if state is not None:
        for key in set(state.cells) - {unquote(c.uri) for c in params.cell_text_documents}:
            publishing.clear(ls, state.cells[key].uri)


def cell_result(document: Document, cell_uri: str) -> CellResult | None:
    """A cell's last result in its notebook's document."""
    return document.cells.cells.get(unquote(cell_uri)) if document.cells is not None else None


__all__ = [
    "SYNC",
    "cell_result",
    "closed",
    "code_cells",
    "debounce_s",
    "notebook_of",
    "notebook_path",
    "snapshot",
]
