"""Save-to-results latency of the daemon against a bare script doing the same work.

    python benchmarks/bench_daemon.py [--repeats 5] [--debounce-ms 20]

The daemon runs in this process (a trusted temporary workspace, warm worker, benchmark
stage off so both sides do the same work: compile + launch on every contract size +
compare with the numpy reference). A "save" writes the module in place; the latency is
from the write to the pushed ``result`` on the socket, watchdog and debounce included.

- cache miss: every save changes a constant, so Warp must recompile.
- cache hit: the same bytes are written again; the result cache answers.
- bare script (cold): ``python bare.py`` per save, as a user without the harness would
  run it: import warp, compile, launch, compare (a fresh kernel cache each time).
- bare loop (warm): the same steps repeated in one warm process (the lower bound for a
  warm worker).

Targets (issue 4): cached save < 200 ms; miss overhead < 20 % over the bare script.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from warp_harness.daemon import protocol
from warp_harness.daemon.server import Daemon, DaemonThread

MODULE = """
import numpy as np
import warp as wp

from warp_harness.contract import Contract

SCALE = {scale}


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = float(SCALE) * x[i] + y[i]


def inputs(n, rng):
    return {{"x": rng.standard_normal(n).astype(np.float32), "y": rng.standard_normal(n).astype(np.float32),
            "out": np.empty(n, np.float32)}}


contract = Contract(kernel=saxpy, reference=lambda x, y: {{"out": SCALE * x + y}}, inputs=inputs,
                    outputs=["out"], sizes=[1, 1000, 100000])
"""

BARE = """
import importlib.util, sys, tempfile, time
import numpy as np
t0 = time.perf_counter()
import warp as wp
wp.config.log_level = wp.LOG_WARNING
wp.config.kernel_cache_dir = tempfile.mkdtemp()
wp.init()
path = sys.argv[1]
loops = int(sys.argv[2])
times = []
for k in range(loops):
    if k:
        src = open(path).read().replace(f"SCALE = {k + 1}.0", f"SCALE = {k + 2}.0")
        open(path, "w").write(src)
        t0 = time.perf_counter()
    spec = importlib.util.spec_from_file_location(f"bench_mod_{k}", path)
    m = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = m
    spec.loader.exec_module(m)
    m.saxpy.module.load("cpu", 1)
    ok = True
    rng = np.random.default_rng(0)
    for n in (1, 1000, 100000):
        a = m.inputs(n, rng)
        x, y = wp.array(a["x"]), wp.array(a["y"])
        out = wp.array(np.full(n, np.nan, np.float32))
        wp.launch(m.saxpy, dim=n, inputs=[x, y, out])
        wp.synchronize()
        ref = m.SCALE * a["x"].astype(np.float64) + a["y"]
        ok &= bool(np.all(np.abs(out.numpy() - ref) <= 1e-5 + 1e-4 * np.abs(ref)))
    times.append(time.perf_counter() - t0)
    assert ok
print(" ".join(f"{t:.6f}" for t in times))
"""


def _median_ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1e3:8.1f}"


def _spread_ms(xs: list[float]) -> str:
    return f"{min(xs) * 1e3:.0f}-{max(xs) * 1e3:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--debounce-ms", type=int, default=20)
    args = ap.parse_args()
    n = args.repeats
    tmp = Path(tempfile.mkdtemp(prefix="wh-bench-"))
    ws = tmp / "ws"
    ws.mkdir()
    mod = ws / "kern.py"
    mod.write_text(textwrap.dedent(MODULE.format(scale="1.0")))

    # ---- bare script, cold: one process per save
    bare = tmp / "bare.py"
    bare.write_text(BARE)
    bare_mod = tmp / "bare_kern.py"
    cold: list[float] = []
    for k in range(n):
        bare_mod.write_text(textwrap.dedent(MODULE.format(scale=f"{k + 1}.0")))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(bare), str(bare_mod), "1"], check=True, capture_output=True)
        cold.append(time.perf_counter() - t0)
    # ---- bare loop, warm: same steps in one process (first iteration excluded)
    bare_mod.write_text(textwrap.dedent(MODULE.format(scale="1.0")))
    out = subprocess.run(
        [sys.executable, str(bare), str(bare_mod), str(n + 1)], check=True, capture_output=True, text=True
    )
    warm = [float(t) for t in out.stdout.split()][1:]

    # ---- daemon
    daemon = Daemon(
        ws,
        trust=True,
        runtime_overrides={"bench": False, "shrink": False},
        socket_path=tmp / "run" / "d.sock",
        debounce_ms=args.debounce_ms,
        log=lambda s: None,
    )
    miss: list[float] = []
    hit: list[float] = []
    check_hit: list[float] = []
    with DaemonThread(daemon) as t, protocol.Client(t.daemon.socket_path, timeout=120) as c:
        c.request("hello", client="bench")
        c.request("check", path="kern.py")  # first compile in the worker: not measured
        for k in range(n):
            c.pushes.clear()
            t0 = time.perf_counter()
            mod.write_text(textwrap.dedent(MODULE.format(scale=f"{k + 2}.0")))
            r = c.wait_push("result", timeout=120, where={"path": "kern.py"})
            miss.append(time.perf_counter() - t0)
            verdict = r.get("kernels", {}).get("saxpy", {}).get("validate")
            assert not r.get("cached", True) and verdict == {"cpu": "pass"}, r["records"]
            time.sleep(0.1)
        for _ in range(n):
            c.pushes.clear()
            data = mod.read_bytes()
            t0 = time.perf_counter()
            mod.write_bytes(data)
            r = c.wait_push("result", timeout=60, where={"path": "kern.py"})
            hit.append(time.perf_counter() - t0)
            assert r["cached"]
            time.sleep(0.1)
        for _ in range(n):
            t0 = time.perf_counter()
            r = c.request("check", path="kern.py")
            check_hit.append(time.perf_counter() - t0)
            assert r["cached"]

    rows = [
        ("daemon save, cache miss (recompile)", miss),
        ("daemon save, cache hit (unchanged)", hit),
        ("daemon `check` request, cache hit", check_hit),
        ("bare script per save (cold process)", cold),
        ("bare loop in a warm process", warm),
    ]
    print(f"\nsave-to-results latency, {n} repeats, debounce {args.debounce_ms} ms, CPU\n")
    print(f"{'what':<40} {'median ms':>9}  {'min-max ms':>12}")
    print("-" * 66)
    for name, xs in rows:
        print(f"{name:<40} {_median_ms(xs):>9}  {_spread_ms(xs):>12}")
    m_miss, m_hit = statistics.median(miss), statistics.median(hit)
    m_cold, m_warm = statistics.median(cold), statistics.median(warm)
    print("-" * 66)
    print(f"ratio daemon miss / bare script (cold):   {m_miss / m_cold:6.2f}  (target <= 1.20)")
    print(f"ratio daemon miss / bare loop (warm):     {m_miss / m_warm:6.2f}")
    print(f"cached save: {m_hit * 1e3:.0f} ms (target < 200 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
