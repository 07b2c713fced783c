"""Pull diagnostics (LSP 3.17): ``textDocument/diagnostic``, ``workspace/diagnostic`` and
``workspace/diagnostic/refresh``; push (``publishDiagnostics``) stays for clients without pull.

A client that declares ``textDocument.diagnostic`` gets no pushes: every analysis still runs where
it did (debounced edits, saves, the daemon's results, settings) and its diagnostics are kept here
per document; the client asks for them. Each report carries a ``resultId`` (a digest of the
diagnostics); a request naming the current one gets an ``unchanged`` report. When diagnostics
change while the document's text did not (the daemon's result arrived, settings or a
pyproject.toml changed), the client has no reason to ask again, so the server sends
``workspace/diagnostic/refresh`` (when the client supports it), once per burst of changes.
``workspace/diagnostic`` reports the open documents and the workspace's other files, read from disk
on a worker thread (server/pull_workspace.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from warp_harness.server.documents import notebook_path
from warp_harness.server.result_ids import result_id

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer
    from warp_harness.server.pull_workspace import WorkspaceFiles

log = logging.getLogger("warp_harness.server.pull")

IDENTIFIER = "warp-harness"


@dataclass(eq=False, repr=False)
class Kept:
    """A document's latest diagnostics, their result id and the version they are for."""

    diagnostics: list[types.Diagnostic]
    result_id: str
    version: int | None


@dataclass(eq=False, repr=False)
class PullState:
    """The server's pulled-diagnostics bookkeeping: what was reported, kept and is pending."""

    kept: dict[str, Kept] = field(default_factory=dict)
    # uri -> (result id, document version) of the last report the client received
    reported: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    refresh_pending: bool = False
    refreshes: int = 0
    # the unopened files' reports; None until the first workspace pull (see `workspace_files`)
    files: WorkspaceFiles | None = None
    refresh_after_scan: bool = False  # a workspace pull answered before its scan finished
    # documents whose last report was answered while their analysis still ran (from the one before)
    answered_early: set[str] = field(default_factory=set)
    # the server's one analysis request (server/analyses.py `request`), handed over at `register`
    request: Callable[[WarpHarnessServer, str], asyncio.Future[Any] | None] | None = None


def state(ls: WarpHarnessServer) -> PullState:
    return ls.pull_state


def workspace_files(pulled: PullState) -> WorkspaceFiles:
    """The unopened files' reports, made at the first workspace pull: start-up (to the first
    diagnostics) does not import the workspace scan."""
    if pulled.files is None:
        from warp_harness.server.pull_workspace import WorkspaceFiles

        pulled.files = WorkspaceFiles()
    return pulled.files


def client_pulls(ls: WarpHarnessServer) -> bool:
    """The client asks for diagnostics itself (it declared ``textDocument.diagnostic``)."""
    try:
        text_document = ls.client_capabilities.text_document
    except Exception:  # before initialize
        return False
    return bool(text_document and text_document.diagnostic is not None)


def _refresh_supported(ls: WarpHarnessServer) -> bool:
    workspace = ls.client_capabilities.workspace
    diagnostics = workspace.diagnostics if workspace else None
    return bool(diagnostics and diagnostics.refresh_support)


def deliver(
    ls: WarpHarnessServer, uri: str, diagnostics: list[types.Diagnostic], version: int | None
) -> None:
    """A document's diagnostics: pushed to a client without pull, kept for one that pulls."""
    if not client_pulls(ls):
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )
        return
    pulled = state(ls)
    kept = Kept(diagnostics, result_id(diagnostics, version), version)
    key = unquote(uri)  # as pygls keys documents: a client may quote a cell URI's `=` or not
    pulled.kept[key] = kept
    reported = pulled.reported.get(key)
    early = key in pulled.answered_early
    pulled.answered_early.discard(key)
    # same text the client last pulled (or a pull answered before this analysis was done), different
    # diagnostics: it will not ask unless told to
    if reported is not None and (early or reported[1] == version) and reported[0] != kept.result_id:
        request_refresh(ls)


def forget(ls: WarpHarnessServer, uri: str) -> None:
    pulled = state(ls)
    pulled.kept.pop(unquote(uri), None)
    pulled.reported.pop(unquote(uri), None)
    pulled.answered_early.discard(unquote(uri))


def request_refresh(ls: WarpHarnessServer) -> None:
    """``workspace/diagnostic/refresh``, once per burst (coalesced on the event loop)."""
    pulled = state(ls)
    if pulled.refresh_pending or not _refresh_supported(ls) or ls.loop is None:
        return
    pulled.refresh_pending = True

    def send() -> None:
        pulled.refresh_pending = False
        pulled.refreshes += 1
        ls.workspace_diagnostic_refresh(None)

    ls.loop.call_soon(send)


def workspace_changed(ls: WarpHarnessServer) -> None:
    """Settings (or a pyproject.toml) changed: the reports of unopened files may too, and the
    client pulls them again only when told."""
    files = state(ls).files
    if client_pulls(ls) and files is not None and files.reports:
        request_refresh(ls)


def _report(
    ls: WarpHarnessServer, uri: str, previous: str | None
) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
    pulled = state(ls)
    kept = pulled.kept.get(unquote(uri))
    if kept is None:
        kept = Kept([], result_id([], None), None)
    pulled.reported[unquote(uri)] = (kept.result_id, kept.version)
    if previous is not None and previous == kept.result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=kept.result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=list(kept.diagnostics), result_id=kept.result_id)


async def _settle(ls: WarpHarnessServer, uris: Sequence[str]) -> None:
    """Wait up to the server's request budget for the analyses of the documents' texts as they are now
    (one superseded meanwhile, by a newer text or new settings, is followed by the newer one); those not
    done by then are answered from their last analysis and marked, so that their result, when it
    differs, sends a refresh. A client that cannot be sent a refresh (Neovim 0.11 pulls without) waits
    for the analyses: it would not ask again until the next edit. Other requests are answered meanwhile."""
    from warp_harness.server.worker import REQUEST_BUDGET_S, settled_within

    request = state(ls).request
    if request is None:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REQUEST_BUDGET_S if _refresh_supported(ls) else None
    while running := {uri: f for uri in uris if (f := request(ls, uri)) is not None}:
        everything = asyncio.gather(*running.values(), return_exceptions=True)
        if deadline is None:
            await everything
            continue
        if not await settled_within(everything, max(0.0, deadline - loop.time())):
            state(ls).answered_early.update(unquote(uri) for uri, f in running.items() if not f.done())
            return


async def document_report(
    ls: WarpHarnessServer, uri: str, previous: str | None
) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
    """The report for one document, for its text as it is now unless that analysis takes long."""
    await _settle(ls, [uri])
    return _report(ls, uri, previous)


def _open_paths(ls: WarpHarnessServer) -> set[str]:
    """The files open in the editor (documents and notebooks), as opened and resolved: the scan
    reports a link into the workspace under the file it names, a link out of it under its own path."""
    paths = {d.path for d in list(ls.workspace.text_documents.values()) if d.path is not None}
    paths.update(p for uri in list(ls.workspace.notebook_documents) if (p := notebook_path(uri)))
    return {str(Path(p).resolve()) for p in paths} | {str(Path(p).absolute()) for p in paths}


async def _scan_files(ls: WarpHarnessServer, skip: set[str]) -> bool:
    """Start a scan of the workspace's files (unless one runs) and wait for it up to the budget;
    whether it finished. One that did not sends a refresh when it does."""
    from warp_harness.server import pull_workspace

    files = workspace_files(state(ls))
    if not ls.roots:
        return True
    if files.scanning is None or files.scanning.done():
        scanning = pull_workspace.start_scan(
            files, list(ls.roots), dict(ls.tier.overrides), frozenset(skip), ls.workspace.position_encoding
        )
        files.scanning = scanning

        def done(future: asyncio.Future[list[str]]) -> None:
            if future.cancelled() or future.exception() is not None:
                log.error(
                    "workspace diagnostics: the scan failed: %r",
                    None if future.cancelled() else future.exception(),
                )
            if state(ls).refresh_after_scan:
                state(ls).refresh_after_scan = False
                request_refresh(ls)

        scanning.add_done_callback(done)
    try:
        await asyncio.wait_for(asyncio.shield(files.scanning), pull_workspace.BUDGET_S)
        return True
    except asyncio.TimeoutError:
        state(ls).refresh_after_scan = True  # the client pulls again once the rest is ready
        return False


def _workspace_item(
    uri: str, version: int | None, diagnostics: Sequence[types.Diagnostic], rid: str, previous: str | None
) -> types.WorkspaceDocumentDiagnosticReport:
    """One file's entry of a workspace report: unchanged when the client already holds ``rid``."""
    if previous == rid:
        return types.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, version=version, result_id=rid)
    return types.WorkspaceFullDocumentDiagnosticReport(
        uri=uri, version=version, items=list(diagnostics), result_id=rid
    )


def _file_items(
    ls: WarpHarnessServer, skip: set[str], previous: dict[str, str]
) -> list[types.WorkspaceDocumentDiagnosticReport]:
    """The reports of the workspace's files not open in the editor, the daemon's results for them
    (kept by ``deliver`` for a closed file) next to the static ones."""
    pulled = state(ls)
    files = workspace_files(pulled)
    with files.lock:
        reports = sorted(files.reports.items())
    items: list[types.WorkspaceDocumentDiagnosticReport] = []
    for path, report in reports:
        if path in skip:
            continue
        diagnostics, rid = report.diagnostics, report.result_id
        extra = pulled.kept.get(unquote(report.uri))
        if extra is not None and extra.diagnostics:
            diagnostics = diagnostics + extra.diagnostics
            rid = result_id(diagnostics, None)
        pulled.reported[unquote(report.uri)] = (rid, None)
        items.append(_workspace_item(report.uri, None, diagnostics, rid, previous.get(unquote(report.uri))))
    return items


# the result id of an open notebook's own file URI (its records are on the cells' URIs)
OPEN_NOTEBOOK_ID = "open-notebook"


async def workspace_report(
    ls: WarpHarnessServer, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    """Every open document (notebook cells included) from its text in the editor, and the
    workspace's other files from disk (server/pull_workspace.py), with unchanged reports where the
    client's previous result id still holds."""
    previous = {unquote(p.uri): p.value for p in params.previous_result_ids}
    items: list[types.WorkspaceDocumentDiagnosticReport] = []
    await _settle(ls, list(ls.workspace.text_documents))
    for uri in list(ls.workspace.text_documents):
        document = ls.workspace.text_documents.get(uri)
        if document is None:
            continue
        held = previous.get(unquote(uri))
        report = _report(ls, uri, held)
        found = [] if isinstance(report, types.RelatedUnchangedDocumentDiagnosticReport) else report.items
        items.append(_workspace_item(uri, document.version, found, report.result_id or "", held))
    # an open notebook's records sit on its cells' URIs; its file's URI may still hold the report
    # made from disk before it was opened, which a client keeps until told otherwise: empty it
    for uri in list(ls.workspace.notebook_documents):
        if not uri.startswith("file:"):
            continue
        items.append(_workspace_item(uri, None, [], OPEN_NOTEBOOK_ID, previous.get(unquote(uri))))
    await _scan_files(ls, _open_paths(ls))
    items.extend(_file_items(ls, _open_paths(ls), previous))  # documents opened while it scanned too
    return types.WorkspaceDiagnosticReport(items=items)


def register(
    server: WarpHarnessServer, request: Callable[[WarpHarnessServer, str], asyncio.Future[Any] | None]
) -> None:
    """The pull handlers; ``request``: the analysis of a document (or cell) as it is now."""
    state(server).request = request

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=IDENTIFIER, inter_file_dependencies=True, workspace_diagnostics=True
        ),
    )
    async def text_document_diagnostic(
        ls: WarpHarnessServer, params: types.DocumentDiagnosticParams
    ) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
        return await document_report(ls, params.text_document.uri, params.previous_result_id)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(
        ls: WarpHarnessServer, params: types.WorkspaceDiagnosticParams
    ) -> types.WorkspaceDiagnosticReport:
        return await workspace_report(ls, params)


__all__ = [
    "client_pulls",
    "deliver",
    "forget",
    "register",
    "request_refresh",
    "result_id",
    "state",
    "workspace_changed",
]
