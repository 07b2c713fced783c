"""The one way an analysis is asked for: a text document's, a notebook's (its code cells joined), and the
ones code actions, hovers and pulled diagnostics wait for.

``request`` snapshots what a document is now (text and version, or the notebook's code cells), hands it
to the analysis thread (server/worker.py) unless the last analysis, done or running, is of the same, and
publishes the result from the event loop if the document is still what was analysed. Edits are
debounced (``schedule``: at once after a pause); opens and saves go at once (``fire``). Requests wait
``REQUEST_BUDGET_S`` at most for the analysis of the text as it is now (``settled``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from pygls.uris import to_fs_path

from warp_harness.server import notebooks, publishing, pull
from warp_harness.server.documents import Document, StaticState
from warp_harness.server.worker import REQUEST_BUDGET_S, Job, Snapshot, settled_within

if TYPE_CHECKING:
    from warp_harness.config import Settings
    from warp_harness.engine import Analysis
    from warp_harness.server.app import WarpHarnessServer

log = logging.getLogger("warp_harness.server")

# an edit after this long a pause is analysed at once (after 1 ms, the event loop's timer resolution:
# changes sent together still arrive within it); edits closer together wait for a pause
LEADING_EDGE_S = 0.001


@dataclass
class Analysed:
    """What the analysis thread hands back: the analysis, the open documents' paths whose launches
    resolved against the analysed module (re-analysed when its text is new), and the settings it used."""

    analysis: Analysis
    dependents: list[str]
    settings: Settings | None = None


# no text of fewer characters (4 UTF-8 bytes at most each) is over the size cap, 8 MiB
# (`model.source.MAX_SOURCE_BYTES`): the modules that tell are imported only for a text that may be
MAY_BE_TOO_LARGE_CHARS = 2 * 1024 * 1024


def too_large(text: str, path: str) -> Analysed | None:
    """A document over the size cap `check` applies to files: one record instead of an analysis (an
    11 MiB document took 77 s and 5.7 GB), neither the analysis thread nor the start-up process
    analysing it. None when it is under the cap."""
    if len(text) <= MAY_BE_TOO_LARGE_CHARS:
        return None
    from warp_harness.engine import Analysis
    from warp_harness.text_cap import document_too_large

    record = document_too_large(text, path)
    return None if record is None else Analysed(Analysis([record], None, None), [])


# ---------------------------------------------------------------------------------------- requests


def request(ls: WarpHarnessServer, uri: str, force: bool = False) -> asyncio.Future[Any] | None:
    """Hand the document's content as it is now (a cell's URI: its notebook's) to the analysis thread,
    unless the last analysis, done or running, is of it; the running analysis, None when it is done.
    ``force``: a new analysis even of the same content (the settings changed)."""
    notebook = notebooks.notebook_of(ls, uri)
    if notebook is not None and notebook.uri != uri:
        uri = notebook.uri  # a cell: its notebook is analysed
    document = ls.documents.get(uri)
    if document is not None:
        document.cancel_pending()
    if ls.loop is None:
        return None
    snapshot = notebooks.snapshot(ls, uri) if notebook is not None else _text_snapshot(ls, uri)
    if snapshot is None or (snapshot.analysed and not force):
        return None
    current_job = ls.worker.jobs.get(uri)
    job = ls.worker.submit(ls.loop, uri, snapshot.stamp, snapshot.work, snapshot.apply, reuse=not force)
    if job is not current_job:  # a new analysis: the collector runs once it is out
        collector = ls.collector
        job.future.add_done_callback(lambda _: ls.worker.call_soon(collector.after_analysis))
        if snapshot.started is not None:
            snapshot.started(job)
    return None if job.future.done() else job.future


def _text_snapshot(ls: WarpHarnessServer, uri: str) -> Snapshot | None:
    text_document = ls.workspace.text_documents.get(uri)
    if text_document is None or text_document.path is None:
        return None
    text, version, path = text_document.source, text_document.version, text_document.path
    document = ls.documents.for_uri(uri)
    current = document.static
    analysed = (
        current is not None
        and current.version == version
        and current.text == text
        and document.from_start_up is not current  # else: this process's own analysis runs
    )
    # set once the start-up process answered the text (or will not): its own analysis waits for it
    answer: list[threading.Event | None] = [None]
    capped = too_large(text, path)

    def started(job: Job) -> None:
        if capped is None:
            answer[0] = ls.ask_start_up(uri, version, text, path, job)

    return Snapshot(
        (version, text),
        analysed,
        (lambda: capped) if capped is not None else lambda: ls.analyse_in_worker(text, path, answer[0]),
        partial(_text_analysed, ls, uri, version, text),
        started,
    )


def _text_analysed(
    ls: WarpHarnessServer, uri: str, version: int | None, text: str, analysed: Analysed
) -> None:
    """On the event loop: publish an analysis unless the document changed (or closed) since."""
    text_document = ls.workspace.text_documents.get(uri)
    if text_document is None or text_document.version != version or text_document.source != text:
        return  # stale: the analysis of the newer text follows
    ls.start_up_answered_by_own(uri)
    document = ls.documents.for_uri(uri)
    preliminary, document.from_start_up = document.from_start_up, None
    # what the publication replaces is freed on the analysis thread once the diagnostics are out
    # (an Enter in an 8,000-kernel file: ~18 ms for the records below it, all moved)
    garbage: list[Any] = [document.static]
    document.static = StaticState(version, text, analysed.analysis)
    document.settings = analysed.settings
    # the start-up process's diagnostics of this text, when they were the same, are not sent again
    same_text = preliminary is not None and preliminary.version == version and preliminary.text == text
    publishing.publish(ls, uri, garbage, resend=not same_text)
    del preliminary
    ls.collector.release(garbage)
    del garbage
    if document.propagated != text:  # a new text: the documents launching its kernels follow
        document.propagated = text
        reanalyse_paths(ls, analysed.dependents, uri)


async def settled(ls: WarpHarnessServer, uri: str) -> Document | None:
    """The document (a cell's: its notebook) after waiting up to ``REQUEST_BUDGET_S`` for the analysis of
    its content now; its last completed analysis is in it. A request never waits out a huge file."""
    await settled_within(request(ls, uri), REQUEST_BUDGET_S)
    notebook = notebooks.notebook_of(ls, uri)
    return ls.documents.get(notebook.uri if notebook is not None else uri)


# ---------------------------------------------------------------------------------------- debounce


def schedule(ls: WarpHarnessServer, uri: str, delay: float, leading_edge: float = LEADING_EDGE_S) -> None:
    """Analyse after ``delay``; at once (``leading_edge``) when the edit follows a pause."""
    if ls.loop is None:
        return
    document = ls.documents.for_uri(uri)
    now = time.monotonic()
    idle = now - document.last_change >= delay
    document.last_change = now
    waiting = document.cancel_pending()
    wait = leading_edge if idle and not waiting else delay
    document.pending = ls.loop.call_later(wait, fire, ls, uri)


def schedule_text(ls: WarpHarnessServer, uri: str) -> None:
    """``didChange``: the document's analysis after its debounce delay (its settings')."""
    text_document = ls.workspace.text_documents.get(uri)
    if text_document is None or text_document.path is None:
        return
    # the settings of its last analysis (reading a pyproject at every keystroke costs ~0.2 ms)
    settings = ls.documents.for_uri(uri).settings
    delay = settings.debounce_ms / 1000 if settings is not None else ls.tier.debounce_s(text_document.path)
    schedule(ls, uri, delay)


def schedule_notebook(ls: WarpHarnessServer, uri: str) -> None:
    """``notebookDocument/didChange``: the notebook's analysis after its debounce delay."""
    delay = notebooks.debounce_s(ls, uri)
    if delay is not None:
        schedule(ls, uri, delay, notebooks.LEADING_EDGE_S)


def fire(ls: WarpHarnessServer, uri: str, force: bool = False) -> None:
    """Analyse now (a debounce that ran out, an open, a save)."""
    document = ls.documents.get(uri)
    if document is not None:
        document.pending = None
    try:
        request(ls, uri, force=force)
    except Exception:  # never let one document take the server down
        log.exception("analysis of %s failed", uri)


# ---------------------------------------------------------------------------------------- lifecycle


def opened(ls: WarpHarnessServer, uri: str, *, notebook: bool = False) -> None:
    """``didOpen`` of a text document or a notebook: analysed at once."""
    ls.documents.opened(uri, notebook=notebook)
    fire(ls, uri)


def closed(ls: WarpHarnessServer, uri: str) -> None:
    """``didClose``: its state goes, the file on disk counts again for the documents launching its
    kernels, its diagnostics are cleared."""
    ls.documents.closed(uri)
    ls.worker.cancel(uri)
    pull.forget(ls, uri)
    path = to_fs_path(uri)
    if path is not None:
        tier = ls.tier

        def closed_in_worker(path: str = path) -> str | None:
            tier.forget(path)
            return tier.document_changed(path, None)  # the file on disk counts again

        ls.then_dependents(closed_in_worker, uri)
    publishing.clear(ls, uri)


def reanalyse_paths(ls: WarpHarnessServer, dependents: Sequence[str], changed_uri: str | None = None) -> None:
    """Re-analyse (and re-publish) the open documents among ``dependents`` (paths)."""
    paths = set(dependents)
    if not paths:
        return
    for uri, text_document in list(ls.workspace.text_documents.items()):
        if uri == changed_uri or text_document.path is None or text_document.path not in paths:
            continue
        if notebooks.notebook_of(ls, uri) is not None:
            continue  # a cell: not analysed on its own
        ls.documents.for_uri(uri).forget_analysis()
        ls.worker.cancel(uri)  # its last analysis resolved against the module's old text
        ls.in_worker(partial(ls.tier.forget, text_document.path))
        schedule_text(ls, uri)


def reanalyse_all(ls: WarpHarnessServer) -> None:
    """The settings changed: every document and notebook again, and the unopened files' reports."""
    for uri in list(ls.workspace.text_documents):
        if notebooks.notebook_of(ls, uri) is not None:
            continue  # a cell: its notebook follows
        ls.documents.for_uri(uri).forget_analysis()
        text_document = ls.workspace.text_documents[uri]
        if text_document.path is not None:
            ls.in_worker(partial(ls.tier.forget, text_document.path))
        fire(ls, uri, force=True)
    for uri in list(ls.workspace.notebook_documents):
        path = notebooks.notebook_path(uri)
        if path is not None:
            ls.in_worker(partial(ls.tier.forget, path))
        fire(ls, uri, force=True)
    pull.workspace_changed(ls)  # the unopened files' reports follow the settings too


__all__ = [
    "LEADING_EDGE_S",
    "REQUEST_BUDGET_S",
    "Analysed",
    "closed",
    "fire",
    "opened",
    "reanalyse_all",
    "reanalyse_paths",
    "request",
    "schedule",
    "schedule_notebook",
    "schedule_text",
    "settled",
    "too_large",
]
