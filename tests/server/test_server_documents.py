"""Open, change, save, close: the static tier's diagnostics follow the text."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsp_helpers import Document, server_info
from lsprotocol import types
from pytest_lsp import LanguageClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_example(tmp_path: Path, name: str) -> Path:
    target = tmp_path / Path(name).name
    shutil.copy(EXAMPLES / name, target)
    return target


async def test_open_publishes_structured_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/mixed_precision.py")).open()
    diagnostics = await doc.diagnostics()
    codes = [d.code for d in diagnostics]
    assert codes.count("WH003") == 2 and "WH004" in codes
    first = next(d for d in diagnostics if d.code == "WH003")
    # the record's line 9 (1-based), col 11 -> LSP line 8
    assert (first.range.start.line, first.range.start.character) == (8, 11)
    assert first.range.end == types.Position(8, 21)
    assert first.severity == types.DiagnosticSeverity.Error
    assert first.source == "warp-harness"
    assert first.code_description is not None and first.code_description.href.endswith("#wh003")
    assert first.data["rule"] == "WH003" and first.data["tier"] == "static"
    assert first.data["location"]["line"] == 9 and first.data["fix"]["edits"]
    assert "hint:" in first.message
    info = await server_info(client)
    assert info["warp_imported"] is False


async def test_change_save_close(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "saxpy.py")).open()
    assert await doc.diagnostics() == []
    line = next(i for i, t in enumerate(doc.text.splitlines()) if "wp.tid()" in t)
    indent = len(doc.text.splitlines()[line]) - len(doc.text.splitlines()[line].lstrip())
    doc.replace(line + 1, 0, line + 1, 0, " " * indent + "q = [k for k in range(3)]\n")
    assert [d.code for d in await doc.diagnostics()] == ["WH002"]
    doc.replace(line + 1, 0, line + 2, 0, "")
    assert await doc.diagnostics() == []
    doc.save()
    assert await doc.diagnostics() == []
    doc.replace(line + 1, 0, line + 1, 0, " " * indent + "q = [k for k in range(3)]\n")
    assert [d.code for d in await doc.diagnostics()] == ["WH002"]
    doc.close()
    assert await doc.cleared() == []


async def test_related_information_points_at_the_launch_site(client: LanguageClient, tmp_path: Path) -> None:
    doc = Document(client, copy_example(tmp_path, "buggy/launches.py")).open()
    diagnostics = await doc.diagnostics()
    tid = next(d for d in diagnostics if d.code == "WH007")
    (related,) = tid.related_information or []
    assert related.location.uri == doc.uri and related.location.range.start.line == 30
    assert related.message == "launched here with a 1-D dim"
    assert "wp.launch" in doc.text.splitlines()[30]
