"""Issue 36 on a GPU: what one device call measures (run from the repository root, warp-lang
installed). Prints a short table last; full results as JSON to the folder given (``$OUT``).

    python3 benchmarks/gpu_issue36.py OUTDIR [l2] [assert] [oob] [stream] [ci]

- ``l2``: the device's L2 and persisting-L2 attributes and what a fresh context's limit does
  when asked for 32 MiB and for the device's maximum (each in a fresh process).
- ``assert``: the raw output of a debug-mode CUDA kernel whose Python assert fails.
- ``oob``: oob_crash.py then the good contracts through one Supervisor on cuda:0.
- ``stream``: stream_large.py through one Supervisor with the default memory limit; the wall
  time, the time of the check after the timed loop and the worker's peak RSS.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "contracts"

_L2 = r"""
import ctypes, json, sys
import warp as wp
wp.config.quiet = True
wp.init()
lib = ctypes.CDLL("libcuda.so.1")
dev = ctypes.c_int()
lib.cuDeviceGet(ctypes.byref(dev), 0)
def attr(n):
    v = ctypes.c_int()
    r = lib.cuDeviceGetAttribute(ctypes.byref(v), n, dev)
    return v.value if r == 0 else f"error {r}"
def limit():
    v = ctypes.c_size_t()
    r = lib.cuCtxGetLimit(ctypes.byref(v), 6)
    return v.value if r == 0 else f"error {r}"
out = {"l2_bytes": attr(38), "max_persisting_l2": attr(108), "name": wp.get_device("cuda:0").name}
ask = int(sys.argv[1]) if sys.argv[1] != "max" else out["max_persisting_l2"]
with wp.ScopedDevice("cuda:0"):
    out["fresh_limit"] = limit()
    out["asked"] = ask
    out["set_result"] = lib.cuCtxSetLimit(6, ctypes.c_size_t(ask))
    out["limit_after"] = limit()
print(json.dumps(out))
"""

_ASSERT = r"""
import numpy as np, warp as wp
wp.config.quiet = True
wp.config.mode = "debug"
@wp.kernel
def bad(x: wp.array(dtype=float)):
    i = wp.tid()
    assert int(i * 1000) < x.shape[0]
    x[i] = 1.0
x = wp.zeros(64, dtype=float, device="cuda:0")
wp.launch(bad, dim=64, inputs=[x], device="cuda:0")
try:
    wp.synchronize_device("cuda:0")
except Exception as exc:
    print("RAISED", type(exc).__name__, exc, flush=True)
from warp_harness.daemon.steps import launching
print("LOST", launching.lost_context_error(None), flush=True)
"""


def l2() -> dict[str, Any]:
    out = {}
    for ask in (str(32 << 20), "max"):
        p = subprocess.run([sys.executable, "-c", _L2, ask], capture_output=True, text=True, timeout=120)
        out[ask] = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else p.stderr[-2000:]
    return out


def raw_assert() -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-c", _ASSERT], capture_output=True, text=True, timeout=300)
    return {"rc": p.returncode, "stdout": p.stdout[-4000:], "stderr": p.stderr[-4000:]}


def _supervisor(ws: Path, **options: Any) -> Any:
    from warp_harness.daemon.options import RuntimeOptions
    from warp_harness.daemon.supervisor import Supervisor

    return Supervisor(ws, RuntimeOptions().merged({"devices": ["cuda:0"], "seed": 7, **options}))


def _summary(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": r.get("status"),
        "records": [
            f"{x['rule']} L{x['location']['line']} {x['message'][:300]}"
            for x in r.get("records", [])
            if x.get("severity") != "info" or x["rule"] in ("WHD011",)
        ],
        "validate": {k: v.get("validate") for k, v in (r.get("kernels") or {}).items()},
        "cacheable": r.get("cacheable"),
    }


def oob() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        names = ["oob_crash.py", "saxpy.py", "scale.py", "scale_contract.py", "race_sum.py", "too_fast.py"]
        for n in names:
            shutil.copy(EXAMPLES / n, ws / n)
        with _supervisor(ws, bench_max_time_s=0.5, bench_min_time_s=0.2, bench_windows=3) as sup:
            for n in names:
                t0 = time.monotonic()
                r = sup.check(ws / n).to_dict()
                out[n] = {**_summary(r), "wall_s": round(time.monotonic() - t0, 2)}
            out["restarts"] = sup.restarts
    return out


def stream(**options: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        shutil.copy(EXAMPLES / "stream_large.py", ws / "stream_large.py")
        t0 = time.monotonic()
        with _supervisor(ws, **options) as sup:
            r = sup.check(ws / "stream_large.py").to_dict()
        wall = time.monotonic() - t0
    bench = {k: (v.get("bench") or {}).get("cuda:0") for k, v in (r.get("kernels") or {}).items()}
    return {
        **_summary(r),
        "wall_s": round(wall, 2),
        "timings": r.get("timings"),
        "medians_us": {k: round(b["median_s"] * 1e6, 1) for k, b in bench.items() if b},
        "revalidated": {k: b.get("revalidated") for k, b in bench.items() if b},
        "children_maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def main() -> None:
    outdir = Path(sys.argv[1])
    wanted = sys.argv[2:] or ["l2", "assert", "oob", "stream"]
    results: dict[str, Any] = {}
    for what in wanted:
        t0 = time.monotonic()
        try:
            if what == "l2":
                results[what] = l2()
            elif what == "assert":
                results[what] = raw_assert()
            elif what == "oob":
                results[what] = oob()
            elif what == "stream":
                results[what] = stream()
            elif what == "stream-big":
                results[what] = stream(memory_mb=48000)
        except Exception as exc:  # keep the other parts
            results[what] = {"error": repr(exc)}
        results.setdefault("seconds", {})[what] = round(time.monotonic() - t0, 1)
        name = f"issue36-{os.environ.get('TAG', 'run')}.json"
        (outdir / name).write_text(json.dumps(results, indent=1, default=str))
        print(f"== {what}\n{json.dumps(results[what], indent=1, default=str)[:6000]}", flush=True)


if __name__ == "__main__":
    main()
