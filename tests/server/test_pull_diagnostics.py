"""Pull diagnostics (LSP 3.17) against the real server over stdio: result ids, unchanged reports,
workspace/diagnostic, the refresh request when settings change, no pushes to a pulling client,
and notebook cells through pull."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsp_helpers import CAPABILITIES, SERVER, Document, published, track_versions
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

BUGGY = (
    "import warp as wp\n\n\n"
    "@wp.kernel\n"
    "def scale(x: wp.array(dtype=wp.float16), n: wp.array(dtype=int)):\n"
    "    i = wp.tid()\n"
    "    x[i] = x[i] * 2.0\n"
)

PULL_CAPABILITIES = types.ClientCapabilities(
    window=CAPABILITIES.window,
    workspace=types.WorkspaceClientCapabilities(
        configuration=False,
        apply_edit=True,
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True),
    ),
    text_document=types.TextDocumentClientCapabilities(
        diagnostic=types.DiagnosticClientCapabilities(related_document_support=False),
        code_action=CAPABILITIES.text_document.code_action if CAPABILITIES.text_document else None,
    ),
    notebook_document=types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()
    ),
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    track_versions(lsp_client)
    refreshes: list[int] = []
    lsp_client._wh_refreshes = refreshes  # type: ignore[attr-defined]

    original = lsp_client.protocol.fm.features.get(types.WORKSPACE_DIAGNOSTIC_REFRESH)

    def on_refresh(params: None) -> None:  # pytest-lsp's own handler, counted
        refreshes.append(1)
        if original is not None:
            original(params)

    lsp_client.protocol.fm.features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = on_refresh

    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=PULL_CAPABILITIES,
            root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name=tmp_path.name)],
            initialization_options={"settings": {"debounce_ms": 50}},
        )
    )
    provider = result.capabilities.diagnostic_provider
    assert isinstance(provider, types.DiagnosticOptions)
    assert provider.workspace_diagnostics and provider.identifier == "warp-harness"
    yield
    await lsp_client.shutdown_session()


async def pull(
    client: LanguageClient, uri: str, previous: str | None = None
) -> types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport:
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous
        )
    )
    assert isinstance(
        report, (types.RelatedFullDocumentDiagnosticReport, types.RelatedUnchangedDocumentDiagnosticReport)
    )
    return report


async def test_result_ids_and_unchanged_reports(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "k.py"
    path.write_text(BUGGY)
    doc = Document(client, path).open()
    first = await pull(client, doc.uri)
    assert isinstance(first, types.RelatedFullDocumentDiagnosticReport) and first.result_id
    assert [d.code for d in first.items] == ["WH003"]
    again = await pull(client, doc.uri, first.result_id)
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    assert again.result_id == first.result_id
    doc.replace(6, 18, 6, 21, "wp.float16(2.0)")  # the fix, typed by hand
    after = await pull(client, doc.uri, first.result_id)
    assert isinstance(after, types.RelatedFullDocumentDiagnosticReport)
    assert not after.items and after.result_id != first.result_id
    assert doc.uri not in published(client)  # a pulling client gets no pushes


async def test_workspace_diagnostic_reports_open_documents(client: LanguageClient, tmp_path: Path) -> None:
    buggy, clean = tmp_path / "a.py", tmp_path / "b.py"
    buggy.write_text(BUGGY)
    clean.write_text("x = 1\n")
    Document(client, buggy).open()
    Document(client, clean).open()
    report = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    by_uri = {item.uri: item for item in report.items}
    full = by_uri[buggy.as_uri()]
    assert isinstance(full, types.WorkspaceFullDocumentDiagnosticReport) and full.version == 1
    assert [d.code for d in full.items] == ["WH003"]
    assert by_uri[clean.as_uri()].kind == "full"
    previous = [types.PreviousResultId(uri=u, value=str(i.result_id)) for u, i in by_uri.items()]
    again = await client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=previous)
    )
    assert {i.uri: i.kind for i in again.items} == {buggy.as_uri(): "unchanged", clean.as_uri(): "unchanged"}


async def test_settings_change_sends_a_refresh(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "k.py"
    path.write_text(BUGGY)
    doc = Document(client, path).open()
    first = await pull(client, doc.uri)
    assert [d.code for d in first.items] == ["WH003"]  # type: ignore[union-attr]
    refreshes: list[int] = client._wh_refreshes  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpHarness": {"ignore": ["WH003"], "debounce_ms": 50}})
    )
    for _ in range(200):
        if refreshes:
            break
        await asyncio.sleep(0.05)
    assert refreshes, "no workspace/diagnostic/refresh after the settings changed"
    after = await pull(client, doc.uri, first.result_id)
    assert isinstance(after, types.RelatedFullDocumentDiagnosticReport) and not after.items


async def test_notebook_cells_are_pulled(client: LanguageClient, tmp_path: Path) -> None:
    nb = (tmp_path / "nb.ipynb").as_uri()
    cells = [f"vscode-notebook-cell:{tmp_path}/nb.ipynb#W{i}sZmlsZQ%3D%3D" for i in range(2)]
    texts = ["import warp as wp\n", BUGGY.split("\n\n\n", 1)[1]]
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=nb,
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=u) for u in cells],
            ),
            cell_text_documents=[
                types.TextDocumentItem(uri=u, language_id="python", version=1, text=t)
                for u, t in zip(cells, texts, strict=True)
            ],
        )
    )
    report = await pull(client, cells[1])
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [(d.code, d.range.start.line) for d in report.items] == [("WH003", 3)]
    first_cell = await pull(client, cells[0])
    assert isinstance(first_cell, types.RelatedFullDocumentDiagnosticReport) and not first_cell.items
    assert cells[1] not in published(client)
