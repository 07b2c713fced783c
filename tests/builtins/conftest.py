"""Fixtures for the builtin-table tests: a private cache folder and Warp's code generator as oracle."""

from __future__ import annotations

import fcntl
import os
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
def extracted_cache() -> Path:
    """One real extraction (child process, real Warp) for the run: the cache file it wrote. The
    pytest-xdist workers share it (a run's shared folder, tests/conftest.py): the first to take the lock
    extracts, the others read the file it wrote (the tests only read or copy it)."""
    shared = Path(os.environ["WARP_HARNESS_TEST_BUILDS"]) / "builtins-extraction"  # tests/conftest.py
    shared.mkdir(mode=0o700, exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = shared / "extracted"
        if done.is_file():
            return Path(done.read_text())
        folder = shared / "cache"
        mp = pytest.MonkeyPatch()
        mp.setenv("WARP_HARNESS_CACHE_DIR", str(folder))
        clear_memo()
        try:
            table = load_table()
            assert table.origin == "extracted", loader.last_load
            version = loader.installed_warp_version()
            assert version is not None
            path = loader.cache_path(version)
        finally:
            clear_memo()
            mp.undo()
        done.write_text(str(path))
        return path


@pytest.fixture(scope="session")
def table(extracted_cache: Path) -> BuiltinTable:
    return loader.load_file(extracted_cache, "cache")


@pytest.fixture
def build(tmp_path: Path) -> Build:
    def run(statements: Sequence[str]) -> list[tuple[str | None, dict[str, Any]]]:
        return warp_build(statements, tmp_path)

    return run
