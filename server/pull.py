"""Pull diagnostics (LSP 3.17): ``textDocument/diagnostic``, ``workspace/diagnostic`` and
``workspace/diagnostic/refresh``; push (``publishDiagnostics``) stays for clients without pull.

A client that declares ``textDocument.diagnostic`` gets no pushes: every analysis still runs where
it did (debounced edits, saves, the daemon's results, settings) and its diagnostics are kept here
per document; the client asks for them. Each report carries a ``resultId`` (a digest of the
diagnostics); a request naming the current one gets an ``unchanged`` report. When diagnostics
change while the document's text did not (the daemon's result arrived, settings or a
pyproject.toml changed), the client has no reason to ask again, so the server sends
``workspace/diagnostic/refresh`` (when the client supports it), once per burst of changes.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer

log = logging.getLogger("warp_harness.server.pull")

IDENTIFIER = "warp-harness"


@dataclass
class Kept:
    """A document's latest diagnostics, their result id and the version they are for."""

    diagnostics: list[types.Diagnostic]
    result_id: str
    version: int | None


@dataclass
class PullState:
    kept: dict[str, Kept] = field(default_factory=dict)
    # uri -> (result id, document version) of the last report the client received
    reported: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    refresh_pending: bool = False
    refreshes: int = 0


def state(ls: WarpHarnessServer) -> PullState:
    return ls.pull_state


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


def result_id(diagnostics: list[types.Diagnostic], version: int | None) -> str:
    """A digest of the diagnostics (lsprotocol's attrs classes have a stable, complete repr)."""
    return hashlib.sha256(f"{version}\0{diagnostics!r}".encode()).hexdigest()[:20]


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
    # same text the client last pulled, different diagnostics: it will not ask unless told to
    if reported is not None and reported[1] == version and reported[0] != kept.result_id:
        request_refresh(ls)


def forget(ls: WarpHarnessServer, uri: str) -> None:
    pulled = state(ls)
    pulled.kept.pop(unquote(uri), None)
    pulled.reported.pop(unquote(uri), None)


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


def document_report(
    ls: WarpHarnessServer, uri: str, previous: str | None
) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
    """The report for one document, analysed now if an edit is still waiting for its debounce."""
    if ls.notebooks.owns_cell(uri):
        ls.notebooks.analyse_now_for_cell(uri)
    else:
        ls.analyse_now(uri)
    return _report(ls, uri, previous)


def workspace_report(
    ls: WarpHarnessServer, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    """Every open document (notebook cells included), with unchanged reports where the client's
    previous result id still holds."""
    previous = {p.uri: p.value for p in params.previous_result_ids}
    items: list[types.WorkspaceDocumentDiagnosticReport] = []
    for uri in list(ls.workspace.text_documents):
        document = ls.workspace.text_documents.get(uri)
        if document is None:
            continue
        report = document_report(ls, uri, previous.get(uri))
        if isinstance(report, types.RelatedUnchangedDocumentDiagnosticReport):
            items.append(
                types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, version=document.version, result_id=report.result_id
                )
            )
        else:
            items.append(
                types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, version=document.version, items=report.items, result_id=report.result_id
                )
            )
    return types.WorkspaceDiagnosticReport(items=items)


def register(server: WarpHarnessServer) -> None:
    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=IDENTIFIER, inter_file_dependencies=True, workspace_diagnostics=True
        ),
    )
    def text_document_diagnostic(
        ls: WarpHarnessServer, params: types.DocumentDiagnosticParams
    ) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
        return document_report(ls, params.text_document.uri, params.previous_result_id)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    def workspace_diagnostic(
        ls: WarpHarnessServer, params: types.WorkspaceDiagnosticParams
    ) -> types.WorkspaceDiagnosticReport:
        return workspace_report(ls, params)


__all__ = ["client_pulls", "deliver", "forget", "register", "request_refresh", "result_id", "state"]
