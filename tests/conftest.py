from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from warp_harness.engine import analyse_source  # noqa: E402
from warp_harness.record import Record  # noqa: E402

Analyse = Callable[..., list[Record]]


@pytest.fixture
def analyse() -> Analyse:
    """``analyse(source, select=["WH003"], target="sm_86")`` -> records of the static tier."""

    def run(source: str, path: str = "kernel.py", **overrides: Any) -> list[Record]:
        return analyse_source(source, path, overrides=overrides or None).records

    return run


def rules_of(records: list[Record]) -> list[str]:
    return [r.rule for r in records]
