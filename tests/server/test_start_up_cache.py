"""The start-up process answers a document it analysed at an earlier start from the user's result cache
(server/start_up_process.py, scope "server"): the same first diagnostics, not analysed again, and not
taken from the cache when a module its launches resolve into changed. Real `warp-harness serve` processes
over stdio, a real cache folder."""

from __future__ import annotations

import os
import queue
import time
from pathlib import Path
from typing import Any

import pytest
from stdio_client import StdioClient
from test_start_up_process import SIM, _open_at_start_up, _publications
from test_workspace_model import KERNELS

from warp_harness.check_cache import ENTRY_FORMAT, decode_entry, encode_records
from warp_harness.launch import module_command
from warp_harness.record import Location, Record, Severity, Stage

PLANTED = "PLANTED-BY-THE-TEST"

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here: no start-up process")


@pytest.fixture
def sim(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text(KERNELS)
    (package / "sim.py").write_text(SIM)
    return package / "sim.py"


def _next_publication(client: StdioClient, uri: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The diagnostics of the next publication for ``uri``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, note = client.notifications.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if note.get("method") == "textDocument/publishDiagnostics" and note["params"]["uri"] == uri:
            diagnostics: list[dict[str, Any]] = note["params"]["diagnostics"]
            return diagnostics
    raise AssertionError(f"nothing published for {uri} within {timeout} s")


def _first(
    root: Path, source: Path, cache: Path, *, corrected: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any], list[Any]]:
    """A fresh server's first diagnostics of ``source``, its serverInfo once its own analysis is done, and
    what it published after the first (``corrected``: wait for one such publication)."""
    client = StdioClient(
        module_command("warp_harness", "serve"), root, env={**os.environ, "XDG_CACHE_HOME": str(cache)}
    )
    try:
        first = _open_at_start_up(client, root, source)
        later = [_next_publication(client, source.as_uri())] if corrected else []
        # the hover waits for the server's own analysis of the text
        position = {"line": 0, "character": 0}
        client.request("textDocument/hover", {"textDocument": {"uri": source.as_uri()}, "position": position})
        info = client.request("warp-harness/serverInfo", None)
        later += [p["diagnostics"] for p in _publications(client, source.as_uri())]
        return first, info, later
    finally:
        client.close()


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "warp-harness" / f"check-v{ENTRY_FORMAT}").rglob("*") if p.is_file())


def _plant(cache: Path) -> int:
    """Every entry's records replaced by one made-up record (the modules they depend on kept); how many."""
    fake = Record(Stage.CONSTRAINT, "WH003", Severity.ERROR, Location("x.py", 1, 0), PLANTED)
    found = _entries(cache)
    for entry in found:
        stored = decode_entry(entry.read_bytes())
        assert stored is not None
        data = encode_records((fake,), stored[1])
        assert data is not None
        entry.write_bytes(data)
    return len(found)


def test_a_document_opened_again_is_answered_from_the_cache(tmp_path: Path, sim: Path) -> None:
    cache = tmp_path / "cache"
    expected, info, _ = _first(tmp_path, sim, cache)
    assert {d["code"] for d in expected} == {"WH004", "WH006", "WH007"}  # WH007: across modules
    assert info["start_up"]["published"] == 1
    assert len(_entries(cache)) == 1  # the start-up process stored its analysis
    again, info, later = _first(tmp_path, sim, cache)
    assert again == expected and info["start_up"]["published"] == 1 and later == []
    # the answer was the entry's: planted, it is what the next server publishes first...
    assert _plant(cache) == 1
    planted, _, corrected = _first(tmp_path, sim, cache, corrected=True)
    assert [d["message"] for d in planted] == [PLANTED]
    # ...until its own analysis of the text publishes the records it finds
    assert corrected == [expected]


def test_an_entry_is_not_used_once_a_module_it_launches_into_changed(tmp_path: Path, sim: Path) -> None:
    cache = tmp_path / "cache"
    _first(tmp_path, sim, cache)
    assert _plant(cache) == 1
    planted, _, _ = _first(tmp_path, sim, cache)
    assert [d["message"] for d in planted] == [PLANTED]  # the modules unchanged: the entry is used
    kernels = sim.with_name("kernels.py")
    kernels.write_text(kernels.read_text() + "\n\nEXTRA = 1\n")
    first, info, _ = _first(tmp_path, sim, cache)
    assert PLANTED not in str(first) and {d["code"] for d in first} == {"WH004", "WH006", "WH007"}
    assert info["start_up"]["published"] == 1
