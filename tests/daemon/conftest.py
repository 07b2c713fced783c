"""Fixtures of the daemon tests: a temporary workspace and a warm worker per test module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from daemon_helpers import FAST

from warp_harness.daemon.supervisor import Supervisor


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest.fixture(scope="module")
def supervisor(workspace: Path) -> Iterator[Supervisor]:
    """Without the warm-up build: a worker's first compile costs about 1.8 CPU s more than the next
    (Warp's per-process start of its compiler), and the warm-up pays it up front with a throwaway
    kernel; every module switch and restart starts a worker, and one whose modules are cache hits
    never compiles, so the warm-up was all it spent. The first compile of a worker that does compile
    pays it instead."""
    sup = Supervisor(workspace, FAST, warmup=False)
    sup.start()
    yield sup
    sup.close()
