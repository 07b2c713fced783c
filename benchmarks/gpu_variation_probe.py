"""Why a memory-bound kernel's benchmark median moves between runs on a GPU (issue 6's
repeatability): over time on the same buffers, or with where fresh buffers land?

1. fixed: two allocations A and B of the vec4 copy's buffers, timed in alternating blocks with
   idle gaps between (as between benchmark runs): if A and B drift together it is the device over
   time; if each stays put but they differ, it is placement.
2. fresh (pool) / fresh (no pool): a new allocation for every block, from Warp's CUDA memory pool,
   then with the pool off (each allocation its own cudaMalloc).
3. harness: the benchmark stage itself, 5 runs per kernel, with the pool off and 8 rotated sets,
   then as it is (pool on, 5 sets).

    python3 benchmarks/gpu_variation_probe.py --out $OUT   (needs a CUDA device)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def block_median(wp: Any, kernel: Any, args: list[Any], dim: int, dev: Any, n: int = 60) -> float:
    for _ in range(20):
        wp.launch(kernel, dim=dim, inputs=args, device=dev)
    times = []
    stream = dev.stream
    for _ in range(n):
        e0 = wp.Event(dev, enable_timing=True)
        e1 = wp.Event(dev, enable_timing=True)
        stream.record_event(e0)
        wp.launch(kernel, dim=dim, inputs=args, device=dev, stream=stream)
        stream.record_event(e1)
        wp.synchronize_event(e1)
        times.append(wp.get_event_elapsed_time(e0, e1) / 1e3)
    return statistics.median(times)


def spread(values: list[float]) -> float:
    return (max(values) - min(values)) / min(values)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", default="/tmp/gpu_variation")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    import numpy as np
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    dev = wp.get_device(a.device)
    import bench_gpu

    mod = bench_gpu._load(bench_gpu.EXAMPLES / "stream_large.py")
    n = mod.copy_vec4_contract.benchmark_size
    host = np.random.default_rng(3).random((n, 4), dtype=np.float32)

    def fresh() -> list[Any]:
        return [wp.array(host, dtype=wp.vec4, device=dev), wp.empty(n, dtype=wp.vec4, device=dev)]

    results: dict[str, Any] = {"device": dev.name, "n": n}
    lines = []

    a_set, b_set = fresh(), fresh()
    fixed: list[tuple[str, float, float]] = []
    t0 = time.time()
    for k in range(24):
        name, args = ("A", a_set) if k % 2 == 0 else ("B", b_set)
        fixed.append((name, time.time() - t0, block_median(wp, mod.copy_vec4, args, n, dev)))
        time.sleep(0.3)
    del a_set, b_set
    results["fixed"] = fixed
    for name in "AB":
        ms = [m for s, _, m in fixed if s == name]
        lines.append(
            f"fixed {name}: {', '.join(f'{m * 1e3:.4f}' for m in ms)} ms, spread {spread(ms) * 100:.2f}%"
        )

    for pool in (True, False):
        wp.set_mempool_enabled(dev, pool)
        ms = []
        for _ in range(12):
            args = fresh()
            ms.append(block_median(wp, mod.copy_vec4, args, n, dev))
            del args
            time.sleep(0.3)
        key = "fresh_pool" if pool else "fresh_nopool"
        results[key] = ms
        lines.append(f"{key}: {', '.join(f'{m * 1e3:.4f}' for m in ms)} ms, spread {spread(ms) * 100:.2f}%")

    from warp_harness.daemon.steps import bench as bench_stage

    for label, pool, n_sets in (("nopool_8sets", False, 8), ("pool_5sets", True, 5)):
        bench_stage.DEVICE_ROTATE_SETS = n_sets
        wp.set_mempool_enabled(dev, pool)
        for kname, kernel, contract in (
            ("copy_vec4", mod.copy_vec4, mod.copy_vec4_contract),
            ("copy_f32", mod.copy_f32, mod.copy_contract),
        ):
            runs = [bench_gpu.harness_bench(kernel, contract, a.device, None, seed=20 + k) for k in range(5)]
            meds = [r["median_s"] for r in runs]
            results[f"harness_{label}_{kname}"] = {
                "medians_s": meds,
                "set_medians_s": [r.get("set_medians_s") for r in runs],
            }
            lines.append(
                f"harness {label} {kname}: {', '.join(f'{m * 1e3:.4f}' for m in meds)} ms, "
                f"spread {spread(meds) * 100:.2f}%"
            )
            for r in runs:
                sm = r.get("set_medians_s") or []
                lines.append(
                    f"    sets {', '.join(f'{m * 1e3:.4f}' for m in sm)} (spread {spread(sm) * 100:.2f}%)"
                )
    wp.set_mempool_enabled(dev, True)
    (out / "variation.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
