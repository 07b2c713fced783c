"""Pull diagnostics (LSP 3.17) against the real server over stdio: result ids, unchanged reports,
workspace/diagnostic (open documents from the editor, the workspace's other files from disk, hostile
files included), the refresh request when settings change, no pushes to a pulling client, and
notebook cells through pull."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import nbformat
import pytest
import pytest_lsp
from lsp_helpers import CAPABILITIES, SERVER, Document, published, track_versions
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from warp_harness.server import pull_workspace

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


# ----------------------------------------------------------------- the workspace's unopened files


async def workspace_pull(
    client: LanguageClient, previous: dict[str, str] | None = None
) -> dict[str, types.WorkspaceDocumentDiagnosticReport]:
    report = await client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(
            previous_result_ids=[types.PreviousResultId(uri=u, value=v) for u, v in (previous or {}).items()]
        )
    )
    return {item.uri: item for item in report.items}


def codes(item: types.WorkspaceDocumentDiagnosticReport) -> list[str | int | None]:
    assert isinstance(item, types.WorkspaceFullDocumentDiagnosticReport), item
    return [d.code for d in item.items]


async def test_unopened_files_are_reported_from_disk(client: LanguageClient, tmp_path: Path) -> None:
    buggy, clean = tmp_path / "pkg" / "a.py", tmp_path / "b.py"
    buggy.parent.mkdir()
    buggy.write_text(BUGGY)
    clean.write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text(BUGGY)  # not Python: not reported
    first = await workspace_pull(client)
    assert set(first) == {buggy.as_uri(), clean.as_uri()}
    assert codes(first[buggy.as_uri()]) == ["WH003"] and codes(first[clean.as_uri()]) == []
    assert first[buggy.as_uri()].version is None  # not open: no document version
    ids = {u: str(i.result_id) for u, i in first.items()}

    again = await workspace_pull(client, ids)
    assert {u: i.kind for u, i in again.items()} == {buggy.as_uri(): "unchanged", clean.as_uri(): "unchanged"}

    buggy.write_text(BUGGY.replace("* 2.0", "* wp.float16(2.0)"))  # fixed on disk
    edited = await workspace_pull(client, ids)
    assert codes(edited[buggy.as_uri()]) == [] and edited[buggy.as_uri()].result_id != ids[buggy.as_uri()]
    assert edited[clean.as_uri()].kind == "unchanged"


async def test_an_open_document_is_reported_from_the_editor_until_closed(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "k.py"
    path.write_text(BUGGY)
    doc = Document(client, path, BUGGY.replace("* 2.0", "* wp.float16(2.0)")).open()  # fixed, unsaved
    opened = await workspace_pull(client)
    assert list(opened) == [doc.uri] and codes(opened[doc.uri]) == [] and opened[doc.uri].version == 1
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=doc.uri))
    )
    closed = await workspace_pull(client, {doc.uri: str(opened[doc.uri].result_id)})
    assert codes(closed[doc.uri]) == ["WH003"] and closed[doc.uri].version is None  # the file on disk


async def test_an_unopened_notebook_names_the_cell(client: LanguageClient, tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import warp as wp"),
        nbformat.v4.new_code_cell(BUGGY.split("\n\n\n", 1)[1]),
    ]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    report = await workspace_pull(client)
    item = report[path.as_uri()]
    assert codes(item) == ["WH003"]
    assert isinstance(item, types.WorkspaceFullDocumentDiagnosticReport)
    assert item.items[0].message.startswith("cell 2:4:12: `x[i] * 2.0` mixes float16 and float32")


async def test_hostile_files_neither_hang_nor_crash_the_server(
    client: LanguageClient, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "fifo.py")  # opening it for reading would block forever
    (tmp_path / "huge.py").write_bytes(b"x = 1\n" * (2 * 1024 * 1024))  # 12 MB, over the size cap
    (tmp_path / "binary.py").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "notjson.ipynb").write_text("{not json")
    buggy = tmp_path / "z.py"
    buggy.write_text(BUGGY)
    report = await asyncio.wait_for(workspace_pull(client), 60)
    by_name = {Path(u).name: codes(i) for u, i in report.items()}
    assert by_name["z.py"] == ["WH003"]  # the good file is still checked
    # not read (a FIFO, over the size cap): WH998; not Python or not a notebook: WH000
    assert by_name["fifo.py"] == ["WH998"] and by_name["huge.py"] == ["WH998"]
    assert by_name["binary.py"] == ["WH000"] and by_name["broken.py"][:1] == ["WH000"]
    assert by_name["notjson.ipynb"] == ["WH000"]
    # the server still answers
    doc = Document(client, buggy).open()
    assert [d.code for d in (await pull(client, doc.uri)).items] == ["WH003"]  # type: ignore[union-attr]


async def test_a_link_out_of_the_workspace_is_not_read(
    client: LanguageClient, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A workspace can ship a link to any file of the machine (issue #30, finding 7): the scan read
    through the resolved path and quoted the other file's code (or /etc/passwd) back to the editor."""
    other = tmp_path_factory.mktemp("another-project") / "private_kernels.py"
    other.write_text(BUGGY.replace("scale", "secret_scale"))
    (tmp_path / "leak.py").symlink_to(other)
    (tmp_path / "passwd.py").symlink_to("/etc/passwd")
    (tmp_path / "real.py").write_text(BUGGY)
    (tmp_path / "alias.py").symlink_to(tmp_path / "real.py")  # a link that stays in: still checked
    report = await workspace_pull(client)
    leak, passwd = (tmp_path / "leak.py").as_uri(), (tmp_path / "passwd.py").as_uri()
    assert set(report) == {leak, passwd, (tmp_path / "real.py").as_uri()}  # the alias is real.py
    assert codes(report[(tmp_path / "real.py").as_uri()]) == ["WH003"]
    for uri in (leak, passwd):
        item = report[uri]
        assert codes(item) == ["WH998"], item
        assert isinstance(item, types.WorkspaceFullDocumentDiagnosticReport)
        assert "a symlink to a file outside the workspace" in item.items[0].message
    everything = " ".join(
        d.message
        for i in report.values()
        if isinstance(i, types.WorkspaceFullDocumentDiagnosticReport)
        for d in i.items
    )
    assert "secret_scale" not in everything and "root:" not in everything
    # opened in the editor, the link is reported from the editor's text only, not from disk too
    doc = Document(client, tmp_path / "leak.py", "x = 1\n").open()
    opened = await workspace_pull(client)
    assert codes(opened[leak]) == [] and opened[leak].version == doc.version


@pytest.mark.slow
async def test_a_long_scan_answers_with_what_is_ready_then_asks_for_a_refresh(
    client: LanguageClient, tmp_path: Path
) -> None:
    kernels = 8000  # seconds of analysis, well past the budget a workspace pull waits
    (tmp_path / "slow.py").write_text(
        "import warp as wp\n\n"
        + "".join(BUGGY.split("\n\n\n", 1)[1].replace("scale", f"k{i}") for i in range(kernels))
    )
    slow = (tmp_path / "slow.py").as_uri()
    open_doc = tmp_path / "open.py"
    open_doc.write_text(BUGGY)
    doc = Document(client, open_doc).open()
    refreshes: list[int] = client._wh_refreshes  # type: ignore[attr-defined]
    started = time.monotonic()
    first = await workspace_pull(client)
    waited = time.monotonic() - started
    assert codes(first[doc.uri]) == ["WH003"]  # the open document is always in the answer
    if slow not in first:  # answered before the scan finished: a refresh follows it
        assert waited < pull_workspace.BUDGET_S + 5
        during = await pull(client, doc.uri)  # the event loop is not blocked by the scan
        assert [d.code for d in during.items] == ["WH003"]  # type: ignore[union-attr]
        for _ in range(1200):
            if refreshes:
                break
            await asyncio.sleep(0.05)
        assert refreshes, "no workspace/diagnostic/refresh after the scan finished"
    second = await workspace_pull(client)
    assert codes(second[slow]) == ["WH003"] * kernels


async def test_an_open_notebook_is_reported_by_cell_not_from_disk(
    client: LanguageClient, tmp_path: Path
) -> None:
    path = tmp_path / "nb.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(BUGGY)]
    nbformat.write(nb, str(path))
    before = await workspace_pull(client)
    assert codes(before[path.as_uri()]) == ["WH003"]  # from disk while it is not open
    cell = f"vscode-notebook-cell:{path}#W0sZmlsZQ%3D%3D"
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=path.as_uri(),
                notebook_type="jupyter-notebook",
                version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell)],
            ),
            cell_text_documents=[
                types.TextDocumentItem(
                    uri=cell, language_id="python", version=1, text=BUGGY.replace("* 2.0", "")
                )
            ],
        )
    )
    report = await workspace_pull(client)
    # the editor's cells count, not the file on disk: the report the client holds for the
    # notebook's own URI is emptied (VS Code showed both, and the e2e clicked the stale one)
    emptied = report[path.as_uri()]
    assert isinstance(emptied, types.WorkspaceFullDocumentDiagnosticReport) and not emptied.items
    assert codes(next(i for u, i in report.items() if u.startswith("vscode-notebook-cell:"))) == []


async def test_settings_change_refreshes_the_unopened_files(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "k.py"
    path.write_text(BUGGY)
    first = await workspace_pull(client)
    assert codes(first[path.as_uri()]) == ["WH003"]
    refreshes: list[int] = client._wh_refreshes  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpHarness": {"ignore": ["WH003"], "debounce_ms": 50}})
    )
    for _ in range(200):
        if refreshes:
            break
        await asyncio.sleep(0.05)
    assert refreshes, "no workspace/diagnostic/refresh after the settings changed, no document open"
    after = await workspace_pull(client, {path.as_uri(): str(first[path.as_uri()].result_id)})
    assert codes(after[path.as_uri()]) == []
