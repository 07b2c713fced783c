"""Captured launches replayed and timed through the ``ray`` executor, on a real local Ray cluster (a head
that runs nothing and one worker node of one CPU on 127.0.0.1: tests/daemon/ray_cluster.py).

The driver prepares each launch's inputs, they travel with the job, the node's sandboxed worker replays
(or times) the launch, the arrays come back and the driver judges them: `ci --trust` over the cluster
gives the records of a local run (an out-of-bounds read placed on its line, the other kernels clean),
and the timings land in the driver's private cache under the node's host. `warp-harness replay
--executor ray` re-runs the failing captured case `ci` stored on the cluster too, with a local
replay's verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from daemon_helpers import capture, driven_ray_cluster
from ray_cluster import LocalRayCluster

from warp_harness import user_state
from warp_harness.daemon import findings as F
from warp_harness.daemon.ci import run_ci
from warp_harness.daemon.executor import ExecutorChoice

# a private kernel cache: a debug build another test made from the same source names that test's file,
# and the bounds record could not be placed on this workspace's line
pytestmark = [pytest.mark.slow, pytest.mark.private_kernel_builds]

SOURCE = """import numpy as np
import warp as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


@wp.kernel
def fill(out: wp.array2d(dtype=float), ny: int):
    i, j = wp.tid()
    out[i, j] = float(i * ny + j)


if __name__ == "__main__":
    x = wp.array(np.arange(64, dtype=np.float32) + 1.0)
    wp.launch(double, dim=64, inputs=[x, wp.zeros(64, dtype=float)])
    wp.launch(fill, dim=(3, 4), inputs=[wp.zeros((3, 4), dtype=float), 4])
"""

PYPROJECT = (
    "[tool.warp-harness]\n[tool.warp-harness.runtime]\n"
    "seed = 1234\nlaunch_timeout_s = 5.0\ntimeout_s = 120.0\nbench_repeats = 10\nbench_max_time_s = 0.1\n"
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    with driven_ray_cluster() as local:
        yield local


def _rules(outcome: object) -> list[tuple[str, str | None, int, str]]:
    return sorted(
        (r.rule, r.location.kernel, r.location.line, r.message)
        for result in outcome.results  # type: ignore[attr-defined]
        for r in result.records
        if r.rule.startswith(("WHD08", "WHD09"))
    )


def test_ci_replays_and_times_captured_launches_on_the_cluster(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    (tmp_path / "kernels.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    capture(tmp_path, "kernels.py", "captured 2 launch(es) of 2 kernel(s)")
    (tmp_path / "kernels.py").write_text(SOURCE.replace("y[i] = x[i] * 2.0", "y[i] = x[i + 1] * 2.0"))
    remote = run_ci(
        [tmp_path], trust=True, workspace=tmp_path, executor=ExecutorChoice("ray", cluster.address)
    )
    found = _rules(remote)
    assert [(rule, kernel) for rule, kernel, _, _ in found] == [
        (F.REPLAY_BOUNDS, "double"),
        (F.REPLAYED, "fill"),
    ], found
    bounds_line = SOURCE.splitlines().index("    y[i] = x[i] * 2.0") + 1
    assert found[0][2] == bounds_line and "x[i + 1]" in found[0][3]  # placed on the access, on the node
    # the clean kernel was timed on the node: its baseline is in the driver's private cache
    timings = user_state.workspace_state_dir(tmp_path, "captured-timings")
    (file,) = timings.glob("*.json")
    assert "kernels.py::fill" in json.loads(file.read_text(encoding="utf-8"))
    # the same records as a local run
    local = run_ci([tmp_path], trust=True, workspace=tmp_path)
    assert _rules(local) == found

    # `warp-harness replay` of the failing captured launch `ci` stored: on the cluster with `--executor
    # ray` (the snapshot is sent, the node replays it), the verdict and records of a local replay
    def replay(*flags: str) -> tuple[list[dict[str, Any]], str]:
        p = subprocess.run(
            [sys.executable, "-m", "warp_harness", "replay", ".", "--trust", "--format", "json", *flags],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 1, p.stdout + p.stderr  # the case still fails
        cases: list[dict[str, Any]] = json.loads(p.stdout)["cases"]
        return cases, p.stderr

    on_cluster, said = replay("--executor", "ray", "--address", cluster.address)
    assert "snapshot sent to the Ray cluster" in said, said
    assert [(c["status"], [r["rule"] for r in c["records"]]) for c in on_cluster] == [
        ("fail", [F.REPLAY_BOUNDS])
    ], on_cluster
    here, said = replay()
    assert "Ray" not in said
    # placed on the access on the cluster too, though the node's debug build came from its kernel
    # cache, compiled by another runner in a folder of its own
    assert json.dumps(here, indent=1) == json.dumps(on_cluster, indent=1)
