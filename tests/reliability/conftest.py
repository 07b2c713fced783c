"""Fixtures of the reliability tests: real daemon processes, started and ended by pid."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "daemon"))  # daemon_helpers

from collections.abc import Iterator

import pytest
from reliability_helpers import Procs


@pytest.fixture
def procs() -> Iterator[Procs]:
    started = Procs()
    yield started
    started.kill_all()
