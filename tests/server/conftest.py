"""A real `warp-harness serve` process over stdio, driven by pytest-lsp's client."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_helpers import track_versions

SERVER = [sys.executable, "-m", "warp_harness", "serve"]

CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(configuration=True, apply_edit=True),
    text_document=types.TextDocumentClientCapabilities(
        publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        code_action=types.CodeActionClientCapabilities(
            code_action_literal_support=types.ClientCodeActionLiteralOptions(
                code_action_kind=types.ClientCodeActionKindOptions(
                    value_set=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll]
                )
            )
        ),
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
    ),
)


def initialize_params(root: Path, options: object = None) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=CAPABILITIES,
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    )


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    """A server whose workspace is ``tmp_path`` (no daemon runs there)."""
    track_versions(lsp_client)
    await lsp_client.initialize_session(initialize_params(tmp_path, {"settings": {"debounce_ms": 50}}))
    yield
    await lsp_client.shutdown_session()
