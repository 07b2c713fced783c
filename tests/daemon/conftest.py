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
    sup = Supervisor(workspace, FAST, warmup=True)
    sup.start()
    yield sup
    sup.close()
