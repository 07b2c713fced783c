"""The editor's `replayTolerances` reach the daemon the server starts, as its command line's
`--replay-tolerances` (the user's: they beat the workspace's `[tool.warp-harness.runtime.tolerances]`,
docs/capture.md). A real server over stdio, a real daemon: the daemon's `status` shows what it got."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_lsp
from lsp_helpers import SERVER, initialize_params, track_versions
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_server_daemon import execute, wait_state

from warp_harness.server.daemon_link import daemon_socket
from warp_harness.wire.framing import Client

TOLERANCES = {"float32": [1e-3, 1e-5], "integrate.float32": {"rtol": 1e-2, "atol": 1e-4}}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    """A server whose editor settings (initializationOptions) trust it and set replay tolerances."""
    track_versions(lsp_client)
    settings = {"warpHarness": {"trust": True, "replayTolerances": TOLERANCES}}
    await lsp_client.initialize_session(initialize_params(tmp_path, settings))
    yield
    await lsp_client.shutdown_session()


async def _status(workspace: Path) -> dict[str, Any]:
    def ask() -> dict[str, Any]:
        with Client(daemon_socket(workspace), timeout=10.0) as c:
            reply: dict[str, Any] = c.request("status")
            return reply

    return await asyncio.to_thread(ask)


async def test_the_editors_replay_tolerances_reach_the_daemon(client: LanguageClient, tmp_path: Path) -> None:
    # the workspace's own table stays the workspace's: not on the daemon's command line
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness.runtime]\nbench = false\n"
        "[tool.warp-harness.runtime.tolerances]\nfloat64 = [0.5, 0.5]\n"
    )
    # a bad value later is refused with a message, and the settings before it are kept
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"warpHarness": {"trust": True, "replayTolerances": {"int32": [1, 1]}}}
        )
    )
    reply = await execute(client, "warp-harness.startDaemon", tmp_path.as_uri())
    assert reply is not None
    await wait_state(client, "idle")
    try:
        status = await _status(tmp_path)
        assert status["trusted"] is True
        assert status["options"]["replay_tolerances"] == {
            "float32": [1e-3, 1e-5],
            "integrate.float32": [1e-2, 1e-4],
        }
        assert any(
            "ignoring the editor's settings" in m.message and "int32" in m.message for m in client.messages
        ), client.messages
    finally:
        await execute(client, "warp-harness.stopDaemon")
        await wait_state(client, "off")
