"""The CUDA oracles of captured-launch replay on a real GPU (issue #31): racy kernels flagged on CUDA
and not on the CPU, correct ones clean.

    PYTHONPATH=<package tree> python benchmarks/gpu_capture_oracles.py OUT_DIR

Writes a scratch workspace under OUT_DIR, captures one CPU run of its kernels
(`warp-harness capture -- python kernels.py`), then replays each kernel's captured launch twice:
with ``devices = ["cpu"]`` (the CPU oracles only) and with ``devices = ["cpu", "cuda"]`` (the same
launch on the CPU and on CUDA, and twice on CUDA: WHD087). Prints one table row per kernel and
oracle (flagged?, elements differing, wall ms of that replay, which includes building the kernel on
its first replay) and writes it to OUT_DIR/gpu_capture_oracles.{md,json}. Needs warp-lang and the
harness importable; no network; a few minutes at most. Without a CUDA device the CUDA rows say
that the oracle did not run.

The racy kernels are the shapes of real bugs: a non-atomic sum and histogram (read-modify-write), a
compare-then-store maximum, and thread 0 resetting a count the other threads still read
(https://github.com/newton-physics/newton/pull/2477).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

KERNELS = """import numpy as np
import warp as wp


@wp.kernel
def racy_sum(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] = s[0] + x[i]


@wp.kernel
def racy_max(x: wp.array(dtype=float), best: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > best[0]:
        best[0] = x[i]


@wp.kernel
def racy_histogram(bins: wp.array(dtype=wp.int32), h: wp.array(dtype=wp.int32)):
    i = wp.tid()
    b = bins[i]
    h[b] = h[b] + 1


@wp.kernel
def reset_count_early(keys: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32), cap: int, nt: int):
    tid = wp.tid()
    count = slots[cap]
    i = tid
    while i < count:
        keys[slots[i]] = 0
        i += nt
    if tid == 0:
        slots[cap] = 0


@wp.kernel
def atomic_sum(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(s, 0, x[i])


@wp.kernel
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 2.0 * x[i]


if __name__ == "__main__":
    n = 1 << 16
    rng = np.random.default_rng(7)
    x = wp.array(rng.uniform(0.0, 1.0, n).astype(np.float32), device="cpu")
    for k in (racy_sum, atomic_sum):
        wp.launch(k, dim=n, inputs=[x, wp.zeros(1, dtype=float, device="cpu")], device="cpu")
    ranks = wp.array(rng.permutation(n).astype(np.float32), device="cpu")  # a lost maximum is 1 or more off
    wp.launch(racy_max, dim=n, inputs=[ranks, wp.zeros(1, dtype=float, device="cpu")], device="cpu")
    bins = wp.array(rng.integers(0, 64, n).astype(np.int32), device="cpu")
    wp.launch(racy_histogram, dim=n, inputs=[bins, wp.zeros(64, dtype=wp.int32, device="cpu")], device="cpu")
    cap, nt = 4096, 256
    keys = wp.array(np.arange(1, cap + 1, dtype=np.int32), device="cpu")
    slots = wp.array(np.concatenate([np.arange(cap, dtype=np.int32), [cap]]).astype(np.int32), device="cpu")
    wp.launch(reset_count_early, dim=nt, inputs=[keys, slots, cap, nt], device="cpu")
    wp.launch(scale, dim=n, inputs=[x, wp.zeros(n, dtype=float, device="cpu")], device="cpu")
"""

NAMES = ("racy_sum", "racy_max", "racy_histogram", "reset_count_early", "atomic_sum", "scale")
_DIFF = re.compile(r"(\d+) of (\d+) elements differ between (the CPU and cuda:\d+|two runs on cuda:\d+)")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: gpu_capture_oracles.py OUT_DIR", file=sys.stderr)
        return 2
    from warp_harness.daemon import findings as F
    from warp_harness.daemon.captured.hook import supervisor_call
    from warp_harness.daemon.captured.replay import replay_module
    from warp_harness.daemon.options import RuntimeOptions
    from warp_harness.daemon.supervisor import Supervisor

    out = Path(argv[0]).resolve()
    ws = out / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "kernels.py").write_text(KERNELS, encoding="utf-8")
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "capture", "--", sys.executable, "kernels.py"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=300,
    )
    capture_s = time.perf_counter() - t0
    print(p.stdout.strip())
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return 1
    base = RuntimeOptions(timeout_s=240.0, launch_timeout_s=30.0, bench=False, memory_mb=16384)
    cpu = base.merged({"devices": ["cpu"]})
    cuda = base.merged({"devices": ["cpu", "cuda"]})
    rows: list[dict[str, Any]] = []
    with Supervisor(ws, cuda, warmup=False) as sup:
        for name in NAMES:
            for label, options in (("cpu", cpu), ("cuda", cuda)):
                t = time.perf_counter()
                outcome = replay_module(
                    ws,
                    ws / "kernels.py",
                    "kernels.py",
                    options,
                    supervisor_call(sup),
                    only_changed=False,
                    kernels={name},
                )
                ms = (time.perf_counter() - t) * 1e3
                problems = [r for r in outcome.records if r.severity.value != "info"]
                if label == "cpu":
                    rows.append(
                        {
                            "kernel": name,
                            "oracle": "CPU replay (bounds, unwritten, diff, NaN)",
                            "flagged": bool(problems),
                            "differing": ", ".join(sorted({r.rule for r in problems})) or "0",
                            "wall_ms": round(ms, 1),
                        }
                    )
                    continue
                summary = " ".join(r.message for r in outcome.records if r.rule == F.REPLAYED)
                race = " ".join(r.message for r in outcome.records if r.rule == F.REPLAY_RACE)
                found: dict[str, int] = {}
                for m in _DIFF.finditer(race):  # summed over the kernel's arrays
                    key = m.group(3).split(" ")[0]
                    found[key] = found.get(key, 0) + int(m.group(1))
                not_run = re.search(r"CUDA race oracle not run: ([^;]*)", summary)
                for oracle, key in (("CPU vs CUDA", "the"), ("CUDA twice", "two")):
                    rows.append(
                        {
                            "kernel": name,
                            "oracle": oracle,
                            "flagged": key in found,
                            "differing": (
                                f"not run: {not_run.group(1)}" if not_run else str(found.get(key, 0))
                            ),
                            "wall_ms": round(ms, 1),
                        }
                    )
                for r in outcome.records:
                    if r.rule not in (F.REPLAYED, F.REPLAY_RACE):
                        print(f"  {name}: {r.rule} {r.message[:300]}")
    header = "| kernel | oracle | flagged? | elements differing | wall ms |\n|---|---|---|---|---|\n"
    table = header + "".join(
        f"| {r['kernel']} | {r['oracle']} | {'yes' if r['flagged'] else 'no'} | {r['differing']} | "
        f"{r['wall_ms']} |\n"
        for r in rows
    )
    print(table)
    print(f"capture: {capture_s:.1f} s")
    (out / "gpu_capture_oracles.md").write_text(table, encoding="utf-8")
    (out / "gpu_capture_oracles.json").write_text(
        json.dumps({"rows": rows, "capture_s": capture_s}, indent=1), encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
