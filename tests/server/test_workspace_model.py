"""The workspace model in the language server (a real `warp-harness serve` over stdio): a launch of a kernel
defined in another module is judged; editing, closing or changing that module on disk re-analyses and
re-publishes the open documents launching its kernels, and only those."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsp_helpers import SERVER, Document, initialize_params, track_versions, wait_published
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

KERNELS = """import warp as wp


@wp.kernel
def scale(a: wp.array2d(dtype=float), s: float):
    i = wp.tid()
    a[i, 0] = a[i, 0] * s
"""
SIM = """import warp as wp

from . import kernels as K


class Sim:
    def __init__(self):
        self.kernel = K.scale

    def step(self, a, n, m):
        wp.launch(self.kernel, dim=(n, m), inputs=[a, 2.0])
"""
OTHER = """import warp as wp


@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


def run(a, n):
    wp.launch(fill, dim=n, inputs=[a])
"""
TWO_D = KERNELS.replace(
    "    i = wp.tid()\n    a[i, 0] = a[i, 0] * s\n", "    i, j = wp.tid()\n    a[i, j] = a[i, j] * s\n"
)


@pytest.fixture
def package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(KERNELS)
    (pkg / "sim.py").write_text(SIM)
    (pkg / "other.py").write_text(OTHER)
    return pkg


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, tmp_path: Path, package: Path) -> AsyncIterator[None]:
    """A server whose workspace folder (``tmp_path``) holds the package when it starts."""
    track_versions(lsp_client)
    counts: Counter[str] = Counter()
    lsp_client._wh_counts = counts  # type: ignore[attr-defined]
    tracked = lsp_client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def count(params: types.PublishDiagnosticsParams) -> Any:
        counts[params.uri] += 1
        return tracked(params)

    lsp_client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = count
    await lsp_client.initialize_session(initialize_params(tmp_path, {"settings": {"debounce_ms": 20}}))
    yield
    await lsp_client.shutdown_session()


def _codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics]


async def _until(client: LanguageClient, doc: Document, has_wh007: bool) -> list[types.Diagnostic]:
    return (
        await wait_published(client, doc.uri, lambda _, d: ("WH007" in _codes(d)) == has_wh007, timeout=30)
    )[1]


async def test_a_launch_of_another_modules_kernel_follows_that_module(
    client: LanguageClient, package: Path
) -> None:
    sim = Document(client, package / "sim.py").open()
    other = Document(client, package / "other.py").open()
    diagnostics = await sim.diagnostics()
    assert _codes(diagnostics) == ["WH007"]
    # at the launch in sim.py, pointing into kernels.py
    (wh007,) = diagnostics
    assert wh007.range.start.line == 10
    related = wh007.related_information or []
    assert any(r.location.uri == (package / "kernels.py").as_uri() for r in related)
    assert await other.diagnostics() == []
    counts: Counter[str] = client._wh_counts  # type: ignore[attr-defined]
    others_before = counts[other.uri]

    # editing the kernel's module (open, unsaved) re-publishes sim.py without the finding
    kernels = Document(client, package / "kernels.py").open()
    await kernels.diagnostics()
    kernels.replace(5, 0, 6, 26, "    i, j = wp.tid()\n    a[i, j] = a[i, j] * s")
    assert kernels.text.rstrip("\n") == TWO_D.rstrip("\n")
    await kernels.diagnostics()
    assert await _until(client, sim, has_wh007=False) == []

    # closing it unsaved: the file on disk (1-D again) counts, and the finding is back
    kernels.close()
    assert _codes(await _until(client, sim, has_wh007=True)) == ["WH007"]

    # a change on disk, announced by a file event
    (package / "kernels.py").write_text(TWO_D)
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=(package / "kernels.py").as_uri(), type=types.FileChangeType.Changed)
            ]
        )
    )
    assert await _until(client, sim, has_wh007=False) == []
    # other.py launches nothing of kernels.py: never analysed or published again
    assert counts[other.uri] == others_before
