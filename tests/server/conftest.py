"""A real `warp-harness serve` process over stdio, driven by pytest-lsp's client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsp_helpers import SERVER, initialize_params, track_versions
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[None]:
    """A server whose workspace is ``tmp_path`` (no daemon runs there)."""
    track_versions(lsp_client)
    await lsp_client.initialize_session(initialize_params(tmp_path, {"settings": {"debounce_ms": 50}}))
    yield
    await lsp_client.shutdown_session()
