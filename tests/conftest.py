from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from checker_helpers import Analyse, rules_of
from warp_harness.engine import analyse_source
from warp_harness.record import Record

__all__ = ["Analyse", "rules_of"]


@pytest.fixture
def analyse() -> Analyse:
    """``analyse(source, select=["WH003"], target="sm_86")`` -> records of the static tier."""

    def run(source: str, path: str = "kernel.py", **overrides: Any) -> list[Record]:
        return analyse_source(source, path, overrides=overrides or None).records

    return run
