"""A large file is analysed off the event loop (server/worker.py): requests about other documents are
answered meanwhile, and the large file's diagnostics still arrive, for its latest text only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp
from lsp_helpers import SERVER, Document, initialize_params, published, track_versions
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

# a few seconds of first analysis (~0.7 ms a kernel on one core), however fast the client is
LARGE_KERNELS = 4000
KERNEL = """
@wp.kernel
def k{n}(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0
"""
SMALL = """import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s
"""
COMPREHENSION = "    q = [k for k in range(3)]\n"  # WH002 in a kernel body


def large_text(with_violation_in: int | None = None) -> str:
    kernels = [KERNEL.format(n=n) for n in range(LARGE_KERNELS)]
    if with_violation_in is not None:
        kernels[with_violation_in] += COMPREHENSION
    return "import warp as wp\n" + "".join(kernels)


def record_publications(client: LanguageClient) -> dict[str, list[int | None]]:
    """uri -> the version of every publication for it, in arrival order."""
    versions: dict[str, list[int | None]] = {}
    features = client.protocol.fm.features
    recorded = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def on_publish(params: types.PublishDiagnosticsParams) -> Any:
        versions.setdefault(params.uri, []).append(params.version)
        return recorded(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = on_publish
    return versions


def body_line(text: str, kernel: int) -> int:
    """The 0-based line of ``k{kernel}``'s ``i = wp.tid()``."""
    lines = text.splitlines()
    return lines.index(f"def k{kernel}(x: wp.array(dtype=float)):") + 1


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[*SERVER, "--no-start-up-process"]))
async def own_thread(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    """A server that analyses every document on its own analysis thread (server/worker.py): with the
    start-up process, the first documents go there, and a large text's first screen is published
    ahead of its whole (``first_screen``), which is not what this test measures."""
    track_versions(lsp_client)
    await lsp_client.initialize_session(initialize_params(tmp_path, {"settings": {"debounce_ms": 50}}))
    yield
    await lsp_client.shutdown_session()


async def test_requests_are_answered_while_a_large_file_is_analysed(
    own_thread: LanguageClient, tmp_path: Path
) -> None:
    client = own_thread
    versions = record_publications(client)
    small_path = tmp_path / "small.py"
    small_path.write_text(SMALL)
    small = Document(client, small_path).open()
    assert await small.diagnostics() == []

    large_path = tmp_path / "large.py"
    large_path.write_text(large_text())
    large = Document(client, large_path).open()

    kernel_name = types.Position(line=4, character=6)  # `scale` in `def scale(`
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=small.uri), position=kernel_name)
    )
    # answered, from the small file's analysis, before the large file's first analysis was done
    assert large.uri not in published(client)
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "scale" in hover.contents.value
    actions = await small.actions([])
    assert large.uri not in published(client)
    assert actions == []  # nothing to fix in the small file

    # fast edits while the first analysis still runs: a violation in k10, gone again, then one in k20
    line = body_line(large.text, 10) + 1
    large.replace(line, 0, line, 0, COMPREHENSION)
    large.replace(line, 0, line + 1, 0, "")
    line = body_line(large.text, 20) + 1
    large.replace(line, 0, line, 0, COMPREHENSION)
    assert large.version == 4

    diagnostics = await large.diagnostics(timeout=120.0)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("WH002", line)]
    # the analyses of the older texts were dropped, not published after the edits
    assert versions[large.uri] == [4]
    assert published(client)[small.uri] == (1, [])


# a client that pulls its diagnostics and can be told to pull again (workspace/diagnostic/refresh)
PULL_CAPABILITIES = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ),
    text_document=types.TextDocumentClientCapabilities(
        diagnostic=types.DiagnosticClientCapabilities(related_document_support=False)
    ),
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def pulling(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    track_versions(lsp_client)
    refreshed = asyncio.Event()
    lsp_client._wh_refreshed = refreshed  # type: ignore[attr-defined]

    def on_refresh(params: None) -> None:
        refreshed.set()

    lsp_client.protocol.fm.features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = on_refresh
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=PULL_CAPABILITIES,
            root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name=tmp_path.name)],
            initialization_options={"settings": {"debounce_ms": 50}},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def pull(client: LanguageClient, uri: str, previous: str | None = None) -> Any:
    return await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous
        )
    )


async def test_a_pull_during_a_long_analysis_is_answered_then_refreshed(
    pulling: LanguageClient, tmp_path: Path
) -> None:
    client = pulling
    refreshed: asyncio.Event = client._wh_refreshed  # type: ignore[attr-defined]
    path = tmp_path / "large.py"
    path.write_text(large_text(with_violation_in=20))
    large = Document(client, path).open()
    expected = [("WH002", body_line(large.text, 20) + 2)]  # after its last line

    first = await pull(client, large.uri)
    assert isinstance(first, types.RelatedFullDocumentDiagnosticReport)
    if first.items:  # the analysis took less than the server's request budget: answered for this text
        assert [(d.code, d.range.start.line) for d in first.items] == expected
        return
    # answered from the last completed analysis (none yet), while this one runs: the server asks the
    # client to pull again once it is done, and the next pull has the file's diagnostics
    await asyncio.wait_for(refreshed.wait(), 120.0)
    second = await pull(client, large.uri, first.result_id)
    assert isinstance(second, types.RelatedFullDocumentDiagnosticReport)
    assert [(d.code, d.range.start.line) for d in second.items] == expected
    assert large.uri not in published(client)  # pulled, never pushed


def text_of_mib(mib: int) -> str:
    """Kernels (each with a violation) up to ``mib`` MiB: what an analysis would take long over."""
    kernel = KERNEL + COMPREHENSION
    count = mib * 1024 * 1024 // len(kernel.format(n=0)) + 1
    return "import warp as wp\n" + "".join(kernel.format(n=n) for n in range(count))


async def test_a_document_over_the_size_cap_is_one_diagnostic_and_the_server_stays_responsive(
    client: LanguageClient, tmp_path: Path
) -> None:
    """An 11 MiB document took the server 77 s and 5.7 GB (issue #30, finding 8). Over the cap `check`
    applies to files (8 MiB), it gets the record `check` gives such a file, at once, and no analysis."""
    from warp_harness.model.source import MAX_SOURCE_BYTES
    from warp_harness.server import app, notebooks

    assert app._MAY_BE_TOO_LARGE_CHARS * 4 == notebooks._MAY_BE_TOO_LARGE_CHARS * 4 == MAX_SOURCE_BYTES
    loop = asyncio.get_running_loop()
    started = loop.time()
    huge = Document(client, tmp_path / "huge.py", text_of_mib(11)).open()
    diagnostics = await huge.diagnostics(timeout=60.0)
    took = loop.time() - started
    assert [(d.code, d.message.splitlines()[0]) for d in diagnostics] == [
        ("WH000", "syntax error: file is 11 MiB; files over 8 MiB are not analysed")
    ]
    assert diagnostics[0].range.start == types.Position(0, 0)
    assert took < 15.0, f"{took:.1f} s for the one diagnostic"
    # the server answers, and analyses a normal file as before
    small = Document(client, tmp_path / "small.py", SMALL + COMPREHENSION).open()
    assert [d.code for d in await small.diagnostics()] == ["WH002"]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=huge.uri), position=types.Position(2, 4)
        )
    )
    assert hover is None or isinstance(hover, types.Hover)
    # cut back under the cap, the document is analysed again
    lines = huge.text.count("\n")
    huge.replace(1, 0, lines, 0, SMALL.split("\n", 1)[1] + COMPREHENSION)
    assert [d.code for d in await huge.diagnostics(timeout=60.0)] == ["WH002"]
