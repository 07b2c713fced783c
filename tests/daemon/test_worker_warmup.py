"""A worker's warm-up compile (``daemon/worker.py``: a throwaway kernel, so Warp's precompiled header
exists before the first save's compile) runs unless ``WARP_HARNESS_WORKER_WARMUP=0``, which the test
suite sets (``tests/conftest.py``: its workers build from a shared cache); the precompiled header is
not used under ``WARP_HARNESS_WORKER_PRECOMPILED_HEADERS=0`` (the suite's short-lived workers). Real worker
processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.worker_process import PRECOMPILED_HEADERS_ENV, WARMUP_ENV, WorkerProcess

pytestmark = pytest.mark.slow


def _ready(workspace: Path) -> dict[str, object]:
    worker = WorkerProcess(workspace, RuntimeOptions(), warmup=True, python=sys.executable, cuda=False)
    try:
        worker.wait_ready()
        return worker.ready
    finally:
        worker.kill()


def test_the_warm_up_compiles_a_kernel_unless_the_environment_says_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(WARMUP_ENV, raising=False)
    warm = _ready(tmp_path)
    assert warm["type"] == "ready" and float(warm["warmup_ms"]) > 0.0  # type: ignore[arg-type]
    monkeypatch.setenv(WARMUP_ENV, "0")
    assert _ready(tmp_path)["warmup_ms"] == 0.0


def test_workers_compile_without_the_precompiled_header_when_the_environment_says_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WARMUP_ENV, "0")
    monkeypatch.delenv(PRECOMPILED_HEADERS_ENV, raising=False)
    assert _ready(tmp_path)["precompiled_headers"] is True  # a user's daemon keeps Warp's default
    monkeypatch.setenv(PRECOMPILED_HEADERS_ENV, "0")
    assert _ready(tmp_path)["precompiled_headers"] is False
