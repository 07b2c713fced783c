"""Fixtures for the builtin-table tests: a private cache folder and Warp's code generator as oracle."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from builtins_oracle import Build, warp_build

from warp_harness.builtins import BuiltinTable, clear_memo, load_table, loader


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder (WARP_HARNESS_CACHE_DIR) and no memoised table, before and after."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("WARP_HARNESS_CACHE_DIR", str(folder))
    monkeypatch.setattr(loader, "EXTRACTOR_PYTHON", None)
    clear_memo()
    yield folder
    clear_memo()


@pytest.fixture(scope="session")
def extracted_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real extraction (child process, real Warp) for the session: the cache file it wrote."""
    folder = tmp_path_factory.mktemp("session-cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("WARP_HARNESS_CACHE_DIR", str(folder))
    clear_memo()
    try:
        table = load_table()
        assert table.origin == "extracted", loader.last_load
        version = loader.installed_warp_version()
        assert version is not None
        return loader.cache_path(version)
    finally:
        clear_memo()
        mp.undo()


@pytest.fixture(scope="session")
def table(extracted_cache: Path) -> BuiltinTable:
    return loader.load_file(extracted_cache, "cache")


@pytest.fixture
def build(tmp_path: Path) -> Build:
    def run(statements: Sequence[str]) -> list[tuple[str | None, dict[str, Any]]]:
        return warp_build(statements, tmp_path)

    return run
