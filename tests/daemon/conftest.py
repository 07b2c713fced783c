"""Shared helpers of the daemon tests: temporary workspaces and a warm worker per module."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.supervisor import Supervisor

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "contracts"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# options that keep the suite fast: short benchmark, quick hang detection
FAST = RuntimeOptions(bench_repeats=10, bench_max_time_s=0.05, bench_warmup=1, launch_timeout_s=2.0, timeout_s=120.0)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ws")


@pytest.fixture(scope="module")
def supervisor(workspace: Path) -> Iterator[Supervisor]:
    sup = Supervisor(workspace, FAST, warmup=True)
    sup.start()
    yield sup
    sup.close()


def rules_of(result: dict) -> list[str]:
    return [r["rule"] for r in result["records"]]


def by_rule(result: dict, rule: str) -> list[dict]:
    return [r for r in result["records"] if r["rule"] == rule]
