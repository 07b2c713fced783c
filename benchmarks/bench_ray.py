"""Wall time of `ci` over examples/contracts and of a CPU tuning grid: the local executor against
a local Ray cluster (127.0.0.1; a head that runs nothing) with 1 and then 2 worker nodes of one
CPU each.

    python benchmarks/bench_ray.py [--repeats 1]

Every run is the real command line (`warp-harness ci|tune ... --executor ray --address ...`) on a
fresh copy of the workspace (cold kernel cache, no result cache; the cluster's node-wide kernel
cache emptied first), so each row pays for its own compiles; the last row runs again with the
node's kernel cache as the previous run left it (what the next commit of a CI finds). On Ray a
module's check is one job per kernel (examples/contracts: 11 modules, 14 kernels). On a 2-core
machine the 2 workers share the cores with the driver: the speed-up here is a floor, not what
separate nodes give. Ratios are against the local run measured in the same invocation.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "daemon"))

from ray_cluster import LocalRayCluster  # noqa: E402

EXAMPLES = REPO / "examples" / "contracts"
CI_PYPROJECT = (
    "[tool.warp-harness]\n[tool.warp-harness.runtime]\nbench = false\nseed = 1234\nlaunch_timeout_s = 2.0\n"
)
TUNE_PYPROJECT = "[tool.warp-harness]\n[tool.warp-harness.runtime]\nseed = 1234\n"
GRID = "[1, 2, 3, 4, 6, 8, 12, 16]"  # ITEMS per thread of examples/contracts/tune_chunks.py


def _ci_workspace(root: Path) -> Path:
    ws = Path(tempfile.mkdtemp(prefix="ci-", dir=root))
    for example in EXAMPLES.glob("*.py"):
        shutil.copy(example, ws / example.name)
    (ws / "pyproject.toml").write_text(CI_PYPROJECT)
    return ws


def _tune_workspace(root: Path) -> Path:
    ws = Path(tempfile.mkdtemp(prefix="tune-", dir=root))
    text = (EXAMPLES / "tune_chunks.py").read_text()
    (ws / "tune_chunks.py").write_text(text.replace('"ITEMS": [1, 2, 4, 8]', f'"ITEMS": {GRID}'))
    (ws / "pyproject.toml").write_text(TUNE_PYPROJECT)
    return ws


def _timed(args: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "warp_harness", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - t0
    if done.returncode not in ok:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return elapsed


def _measure(
    root: Path, executor: list[str], env: dict[str, str], repeats: int, reset: Callable[[], None]
) -> tuple[float, float]:
    """(ci s, tune s), each the best of ``repeats``; ``reset`` runs before each run."""

    def timed(args: list[str], cwd: Path) -> float:
        reset()
        return _timed(args, cwd, env, (0, 1))

    ci = min(
        timed(["ci", ".", "--trust", "--format", "json", *executor], _ci_workspace(root))
        for _ in range(repeats)
    )
    tune = min(
        timed(["tune", "tune_chunks.py", "--trust", *executor], _tune_workspace(root)) for _ in range(repeats)
    )
    return ci, tune


def _nothing() -> None:
    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs per row (the best is shown)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    rows: list[tuple[str, float, float]] = []
    try:
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        rows.append(("local executor", *_measure(root, [], env, args.repeats, _nothing)))
        cluster = LocalRayCluster(workers=1)
        node_cache = cluster.tmp / f"warp-harness-ray-{os.getuid()}" / "kernels"

        def cold() -> None:  # the runners of the previous run ended with its driver
            shutil.rmtree(node_cache, ignore_errors=True)

        try:
            ray = ["--executor", "ray", "--address", cluster.address]
            rows.append(("Ray, 1 worker", *_measure(root, ray, cluster.env, args.repeats, cold)))
            cluster.add_worker(1)
            rows.append(("Ray, 2 workers", *_measure(root, ray, cluster.env, args.repeats, cold)))
            rows.append(("Ray, 2, warm node", *_measure(root, ray, cluster.env, args.repeats, _nothing)))
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    modules = len(list(EXAMPLES.glob("*.py")))
    candidates = GRID.count(",") + 1
    print(f"ci over examples/contracts ({modules} files, bench off); tune: {candidates} CPU candidates")
    print(f"{os.cpu_count()} CPUs on this machine\n")
    header = f"{'executor':<18} {'ci (s)':>8} {'x local':>8} {'tune (s)':>9} {'x local':>8}"
    print(header)
    print("-" * len(header))
    local_ci, local_tune = rows[0][1], rows[0][2]
    for name, ci, tune in rows:
        print(f"{name:<18} {ci:8.1f} {local_ci / ci:8.2f} {tune:9.1f} {local_tune / tune:8.2f}")


if __name__ == "__main__":
    main()
