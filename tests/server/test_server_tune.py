"""A tuning result becomes an info diagnostic with a quick fix that rewrites the constants."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from lsp_helpers import Document, wait_published
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server_documents import EXAMPLES

from warp_harness import user_state
from warp_harness.daemon.tune import Candidate, store_result


async def test_tuned_configuration_as_a_code_action(client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "tile_gemm_tune.py"
    shutil.copy(EXAMPLES / "contracts" / "tile_gemm_tune.py", path)
    current = {"TILE_M": 32, "TILE_N": 32, "TILE_K": 16, "BLOCK_DIM": 64}
    faster = {"TILE_M": 64, "TILE_N": 64, "TILE_K": 32, "BLOCK_DIM": 128}
    rows = [
        Candidate(current, status="timed", median_s=2e-3, shared_bytes=8192, current=True),
        Candidate(faster, status="timed", median_s=1e-3, shared_bytes=32768),
        Candidate({**faster, "TILE_K": 256}, status="rejected", reasons=["WH015: too much shared memory"]),
    ]
    store_result(tmp_path, path, "tile_gemm", rows, "sm_90")
    doc = Document(client, path).open()
    diagnostics = await doc.diagnostics()
    (tuned,) = [d for d in diagnostics if d.code == "WHD034"]
    assert tuned.source == "warp-harness tune" and tuned.severity == types.DiagnosticSeverity.Information
    assert tuned.range.start.line == next(
        i for i, t in enumerate(doc.text.splitlines()) if t.startswith("TILE_M")
    )
    assert "2.00x the speed of TILE_M=32" in tuned.message and "on sm_90" in tuned.message

    # a performance change is never part of fix-all; it is offered on its own
    fix_all = await doc.actions([], only=[types.CodeActionKind.SourceFixAll])
    assert fix_all == []
    (apply,) = [a for a in await doc.actions([tuned]) if a.title.startswith("Apply the tuned configuration")]
    assert apply.edit is not None
    doc.apply(apply.edit)
    assert "TILE_M = wp.constant(64)" in doc.text and "BLOCK_DIM = 128" in doc.text
    assert "TILE_K = wp.constant(32)" in doc.text and "TILE_N = wp.constant(64)" in doc.text
    after = await doc.diagnostics()
    assert not any(d.code == "WHD034" for d in after)

    # a corrupt result file is ignored, not fatal
    (tmp_path / ".warp-harness" / "tune" / "broken.json").write_text("{not json")
    doc.replace(0, 0, 0, 0, "# touched\n")
    await wait_published(client, doc.uri, lambda v, d: v == doc.version)


async def test_a_tuning_result_the_repository_ships_is_not_shown(
    client: LanguageClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository can ship ``.warp-harness/tune/*.json``: its "faster configuration" (any
    constants, any claimed speed-up) was offered as a quick fix. A result counts only with the tag
    this user's harness gives it: one tagged with another user's secret, or with none, is ignored."""
    path = tmp_path / "tile_gemm_tune.py"
    shutil.copy(EXAMPLES / "contracts" / "tile_gemm_tune.py", path)
    current = {"TILE_M": 32, "TILE_N": 32, "TILE_K": 16, "BLOCK_DIM": 64}
    forged = {"TILE_M": 64, "TILE_N": 64, "TILE_K": 512, "BLOCK_DIM": 1024}
    rows = [
        Candidate(current, status="timed", median_s=2e-3, current=True),
        Candidate(forged, status="timed", median_s=1e-4),
    ]
    monkeypatch.setenv(user_state.CACHE_ENV, str(tmp_path / "attacker-cache"))  # another user's secret
    stored = store_result(tmp_path, path, "tile_gemm", rows, "sm_90")
    monkeypatch.undo()
    untagged = json.loads(stored.read_text())
    del untagged["tag"]
    stored.with_name("untagged.json").write_text(json.dumps(untagged))
    doc = Document(client, path).open()
    diagnostics = await doc.diagnostics()
    assert not [d for d in diagnostics if d.code == "WHD034"], diagnostics
