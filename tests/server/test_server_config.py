"""Configuration: initializationOptions, didChangeConfiguration (pushed and pulled), pyproject."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsp_helpers import SERVER, Document, initialize_params, server_info, track_versions, wait_published
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server_documents import copy_example


def configure(client: LanguageClient, settings: object) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))


async def codes_after(doc: Document, predicate: object) -> list[str]:
    _, diagnostics = await wait_published(doc.client, doc.uri, predicate)  # type: ignore[arg-type]
    return [str(d.code) for d in diagnostics]


async def test_pushed_settings_take_effect_and_republish(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    assert "WH003" in [d.code for d in await doc.diagnostics()]
    configure(client, {"warpHarness": {"ignore": ["WH003"]}})
    codes = await codes_after(doc, lambda v, d: not any(x.code == "WH003" for x in d))
    assert codes == ["WH004"]
    configure(client, {"warpHarness": {"ignore": None}})
    codes = await codes_after(doc, lambda v, d: any(x.code == "WH003" for x in d))
    assert sorted(codes) == ["WH003", "WH003", "WH004"]


async def test_target_change_republishes(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/big_tiles.py")).open()
    (sm86,) = [d for d in await doc.diagnostics() if d.code == "WH015"]
    assert "sm_86 allows 99 KiB" in sm86.message
    configure(client, {"warpHarness": {"target": "sm_90"}})
    _, diagnostics = await wait_published(client, doc.uri, lambda v, d: any("sm_90" in x.message for x in d))
    assert [d.code for d in diagnostics if d.code == "WH015"] == ["WH015"]
    configure(client, {"warpHarness": {"target": "cpu"}})
    codes = await codes_after(doc, lambda v, d: not any(x.code == "WH015" for x in d))
    assert codes == ["WH009"]


async def test_a_bad_setting_is_reported_and_the_old_ones_kept(
    client: LanguageClient, tmp_path: Path
) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/big_tiles.py")).open()
    await doc.diagnostics()
    configure(client, {"warpHarness": {"ignore": ["WH009"]}})
    await codes_after(doc, lambda v, d: not any(x.code == "WH009" for x in d))
    configure(client, {"warpHarness": {"target": "sm_99"}})
    for _ in range(100):
        if client.messages:
            break
        await asyncio.sleep(0.05)
    (message,) = client.messages
    assert message.type == types.MessageType.Error and "sm_99" in message.message
    assert (await server_info(client))["overrides"] == {"ignore": ["WH009"]}


async def test_settings_pulled_when_the_notification_carries_none(
    client: LanguageClient, tmp_path: Path
) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    await doc.diagnostics()
    client.set_configuration({"select": ["WH004"]}, section="warpHarness")
    configure(client, None)
    assert await codes_after(doc, lambda v, d: len(d) == 1) == ["WH004"]


async def test_pyproject_settings_and_their_changes(client: LanguageClient, tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.warp-harness]\nignore = ["WH004"]\n')
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    assert [d.code for d in await doc.diagnostics()] == ["WH003", "WH003"]
    pyproject.write_text('[tool.warp-harness]\nselect = ["WH004"]\n')
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    assert await codes_after(doc, lambda v, d: [x.code for x in d] == ["WH004"]) == ["WH004"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def selecting_client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    track_versions(lsp_client)
    await lsp_client.initialize_session(initialize_params(tmp_path, {"settings": {"select": ["WH004"]}}))
    yield
    await lsp_client.shutdown_session()


async def test_initialization_options(selecting_client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(selecting_client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    assert [d.code for d in await doc.diagnostics()] == ["WH004"]
