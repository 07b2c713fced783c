"""`ci` (static tier, untrusted) against `check` on a real tree, cold and re-run, with one result cache.

Both commands keep their results in the user's result cache (`warp_harness/check_cache.py`; `ci` under a
scope of its own: it analyses each file alone, `check` in the workspace model). Rows, each a fresh
process, in one private cache folder (XDG_CACHE_HOME): `check` and `ci` once with an empty cache (cold,
written), then each re-run over the unchanged tree (warm), interleaved over ``--repeat`` rounds so load
on a shared machine hits both alike. Bytecode is written (PYTHONDONTWRITEBYTECODE unset, one run first),
as an installed package has it. Printed: min / median / max wall seconds per row, the ratio of `ci`'s
warm median to `check`'s, and the load average before and after.

``--identity``: also runs `ci --output-format json` cold and warm and compares the two reports (the
records and the `files` list): the cache must not change what `ci` reports.

    python benchmarks/bench_ci_cache.py [--repeat 3] [--corpus PATH] [--identity]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from real_trees import NEWTON, fetch

WH = [sys.executable, "-m", "warp_harness"]


def run(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    return elapsed


def ci_report(tree: Path, env: dict[str, str], out: Path) -> dict[str, object]:
    command = [*WH, "ci", str(tree), "--output-format", "json", "-o", str(out)]
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    report: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="a folder (default: newton 1.8.0, downloaded once)")
    parser.add_argument("--identity", action="store_true", help="compare ci's JSON cold and warm")
    args = parser.parse_args()
    tree = args.corpus or fetch(NEWTON)
    files = sum(1 for _ in tree.rglob("*.py"))
    load_before = os.getloadavg()
    rows: dict[str, list[float]] = {"check cold": [], "ci cold": [], "check warm": [], "ci warm": []}
    folder = Path(tempfile.mkdtemp(prefix="wh-bench-ci-"))
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**base, "XDG_CACHE_HOME": str(folder / "cache")}
    check = [*WH, "check", str(tree), "--exit-zero"]
    ci = [*WH, "ci", str(tree)]
    try:
        run([*WH, "rules"], env)  # bytecode written
        rows["check cold"].append(run(check, env))
        rows["ci cold"].append(run(ci, env))
        for _ in range(args.repeat):
            rows["check warm"].append(run(check, env))
            rows["ci warm"].append(run(ci, env))
        identical = None
        if args.identity:
            env = {**base, "XDG_CACHE_HOME": str(folder / "identity")}
            cold = ci_report(tree, env, folder / "cold.json")
            warm = ci_report(tree, env, folder / "warm.json")
            identical = cold == warm
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    load_after = os.getloadavg()
    load = f"load {load_before[0]:.2f} -> {load_after[0]:.2f}"
    print(f"{tree}: {files} Python files; {args.repeat} warm rounds; {load}")
    print(f"{'row':<12} {'min s':>7} {'median s':>9} {'max s':>7}")
    for name, times in rows.items():
        print(f"{name:<12} {min(times):7.2f} {statistics.median(times):9.2f} {max(times):7.2f}")
    ratio = statistics.median(rows["ci warm"]) / statistics.median(rows["check warm"])
    print(f"ci warm / check warm: {ratio:.2f}x (target <= 1.2x)")
    if identical is not None:
        print(f"ci JSON cold == warm: {identical}")


if __name__ == "__main__":
    main()
