"""Per-rule severity from the editor (VS Code's `warpHarness.severity`): the server applies the
`severity` table it gets in initializationOptions and workspace/didChangeConfiguration."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsp_helpers import SERVER, Document, initialize_params, server_info, track_versions, wait_published
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server_documents import copy_example

Severity = types.DiagnosticSeverity


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    """A server started as VS Code starts it with `"warpHarness.severity": {"WH003": "hint"}`."""
    track_versions(lsp_client)
    options = {"settings": {"debounce_ms": 50, "severity": {"WH003": "hint"}}}
    await lsp_client.initialize_session(initialize_params(tmp_path, options))
    yield
    await lsp_client.shutdown_session()


def severities(diagnostics: list[types.Diagnostic]) -> list[tuple[str, Severity | None]]:
    return sorted((str(d.code), d.severity) for d in diagnostics)


async def test_severity_from_initialization_options_then_changed(
    client: LanguageClient, tmp_path: Path
) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    # without a setting all three are errors (`warp-harness check` says so)
    assert severities(await doc.diagnostics()) == [
        ("WH003", Severity.Hint),
        ("WH003", Severity.Hint),
        ("WH004", Severity.Error),
    ]
    # a change replaces the table: WH003 is back to its own severity, WH004 (lower-case id) is a warning
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpHarness": {"severity": {"wh004": "warning"}}})
    )
    _, diagnostics = await wait_published(
        client, doc.uri, lambda v, d: any(x.severity == Severity.Warning for x in d)
    )
    assert severities(diagnostics) == [
        ("WH003", Severity.Error),
        ("WH003", Severity.Error),
        ("WH004", Severity.Warning),
    ]


async def test_an_unknown_level_is_reported_and_the_previous_table_kept(
    client: LanguageClient, tmp_path: Path
) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    await doc.diagnostics()
    # "off" is the editor's own level (the extension hides those rules; the server has none)
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpHarness": {"severity": {"WH004": "off"}}})
    )
    for _ in range(100):
        if client.messages:
            break
        await asyncio.sleep(0.05)
    (message,) = client.messages
    assert message.type == types.MessageType.Error
    assert "`severity.'WH004'` is 'off'" in message.message
    assert "error, warning, info, hint" in message.message
    info = await server_info(client)
    assert info["overrides"] == {"debounce_ms": 50}  # (`severity` is left out of the info)
    lines = doc.text.count("\n")
    doc.replace(lines, 0, lines, 0, "\n")  # re-analysed with the settings the server kept
    assert ("WH003", Severity.Hint) in severities(await doc.diagnostics())
