"""Issue 36 on a GPU: what one device call measures (run from the repository root, warp-lang
installed). Prints a short table last; full results as JSON to the folder given (``$OUT``).

    python3 benchmarks/gpu_issue36.py OUTDIR [l2] [assert] [oob] [stream] [stream-big] [ci] [daemon]
        [turn2 TREE]

- ``l2``: the device's L2 and persisting-L2 attributes and what a fresh context's limit does
  when asked for 32 MiB and for the device's maximum (each in a fresh process).
- ``assert``: the raw output of a debug-mode CUDA kernel whose Python assert fails.
- ``oob``: oob_crash.py then the good contracts through one Supervisor on cuda:0.
- ``stream``: stream_large.py through one Supervisor with the default memory limit; the wall
  time, the time of the check after the timed loop and the worker's peak RSS (``stream-big``:
  with a 48,000 MB limit, the command of the issue).
- ``ci``: ``warp-harness ci examples/contracts --trust --device cuda:0`` (a copy), every record.
- ``daemon``: a real daemon on cuda:0 watching a folder; oob_crash.py then the good contracts
  saved into it one by one, then saxpy.py saved again: each save's result.
- ``turn2 TREE``: ``bench stream_large.py --trust --device cuda:0`` with the package tree TREE
  (the turn-2 harness) and with this one (its default; with the windows' early stop off), back to
  back, in TURN2_ROUNDS rounds (2), at the default limits (and at 48,000 MB with TURN2_BIG=1).
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
DEVICE = os.environ.get("GPU_DEVICE", "cuda:0")  # cpu: try the script on a machine without a GPU

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
    with tempfile.TemporaryDirectory() as tmp:  # Warp builds kernels from a file, not from exec
        script = Path(tmp) / "device_assert.py"
        script.write_text(_ASSERT, encoding="utf-8")
        p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    return {"rc": p.returncode, "stdout": p.stdout[-4000:], "stderr": p.stderr[-4000:]}


def _cli(*args: str, tree: Path = ROOT, timeout: float = 500) -> subprocess.CompletedProcess[str]:
    """``python -m warp_harness ARGS`` with the package tree ``tree`` first on the path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    cmd = [sys.executable, "-m", "warp_harness", *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tempfile.gettempdir()
    )


def ci() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "contracts"
        shutil.copytree(EXAMPLES, ws)
        t0 = time.monotonic()
        p = _cli("ci", str(ws), "--trust", "--device", DEVICE, "--seed", "1234", "--format", "json")
        wall = time.monotonic() - t0
    try:
        results = json.loads(p.stdout)["results"]
    except Exception:
        return {"rc": p.returncode, "stdout": p.stdout[-3000:], "stderr": p.stderr[-3000:]}
    return {
        "rc": p.returncode,
        "wall_s": round(wall, 1),
        "records": [
            f"{r['rule']} {r['severity']} {Path(r['path']).name}:{r['location']['line']} "
            f"{r['location'].get('kernel')} {r['message'][:220]}"
            for r in results
        ],
        "stderr_tail": p.stderr[-1500:],
    }


def _daemon_result(ws: Path, name: str, sha: str, deadline: float) -> dict[str, Any] | None:
    while time.monotonic() < deadline:
        p = _cli("results", str(ws), "--file", str(ws / name), "--json", timeout=60)
        if p.stdout.strip():  # exit 1 when the result has errors
            try:
                found = json.loads(p.stdout)
            except ValueError:
                found = None
            items = (
                found
                if isinstance(found, list)
                else list((found or {}).values())
                if isinstance(found, dict)
                else []
            )
            for r in items:
                if (
                    isinstance(r, dict)
                    and r.get("source_sha256") == sha
                    and r.get("status") not in (None, "queued", "running")
                ):
                    return r
        time.sleep(1.0)
    return None


def daemon() -> dict[str, Any]:
    import hashlib

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        shutil.copy(EXAMPLES / "scale_contract.py", ws / "scale_contract.py")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        log = open(Path(tmp) / "daemon.log", "w")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "warp_harness",
                "daemon",
                str(ws),
                "--trust",
                "--device",
                DEVICE,
                "--seed",
                "7",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=tmp,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and _cli("status", str(ws), timeout=30).returncode != 0:
                time.sleep(0.5)
            saves = ["oob_crash.py", "saxpy.py", "scale.py", "race_sum.py", "too_fast.py", "saxpy.py"]
            for k, name in enumerate(saves):
                text = (EXAMPLES / name).read_text(encoding="utf-8") + ("\n# saved again\n" if k == 5 else "")
                (ws / name).write_text(text, encoding="utf-8")
                sha = hashlib.sha256(text.encode()).hexdigest()
                t0 = time.monotonic()
                r = _daemon_result(ws, name, sha, time.monotonic() + 150)
                key = f"{k}:{name}"
                out[key] = {"wall_s": round(time.monotonic() - t0, 1)}
                if r is None:
                    out[key]["result"] = "no result within 150 s"
                else:
                    out[key].update(_summary(r))
            out["status"] = _cli("status", str(ws), "--json", timeout=30).stdout[-3000:]
        finally:
            _cli("stop", str(ws), timeout=30)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()
            out["log_tail"] = (Path(tmp) / "daemon.log").read_text(errors="replace")[-3000:]
    return out


def turn2(tree: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    # TURN2_ROUNDS rounds of (turn 2, this tree) back to back, each at the default limits (and
    # with TURN2_BIG=1 also at 48,000 MB): the second round runs with both trees' Warp caches warm
    rounds = int(os.environ.get("TURN2_ROUNDS", "2"))
    limits = [[], ["--memory-mb", "48000"]] if os.environ.get("TURN2_BIG") else [[]]
    # "now all 15 windows": this tree with the early stop off (bench_windows_agree = 15 in the
    # workspace's pyproject: the protocol before it); "now 1 window": timed in one window as turn 2
    # did (bench_windows = 1), which separates the cost of the windows from that of the checks
    variants = {
        "turn2": (tree, ""),
        "now": (ROOT, ""),
        "now all 15 windows": (ROOT, "bench_windows_agree = 15\n"),
        "now 1 window": (ROOT, "bench_windows = 1\n"),
    }
    wanted = os.environ.get("TURN2_TREES", "turn2,now,now all 15 windows").split(",")
    for r, label in [(r, label) for r in range(rounds) for label in wanted]:
        where, runtime = variants[label]
        for limit in limits:
            with tempfile.TemporaryDirectory() as tmp:
                ws = Path(tmp)
                shutil.copy(where / "examples" / "contracts" / "stream_large.py", ws / "stream_large.py")
                if runtime:
                    (ws / "pyproject.toml").write_text("[tool.warp-harness.runtime]\n" + runtime)
                report = ["--format", "json", "-o", str(ws / "bench.json")] if where == ROOT else []
                t0 = time.monotonic()
                p = _cli(
                    "bench",
                    str(ws / "stream_large.py"),
                    "--trust",
                    "--device",
                    DEVICE,
                    *limit,
                    *report,
                    tree=where,
                )
                row: dict[str, Any] = {
                    "rc": p.returncode,
                    "wall_s": round(time.monotonic() - t0, 1),
                    "stdout_tail": p.stdout[-2500:],
                    "stderr_tail": p.stderr[-800:],
                }
                if report and (ws / "bench.json").exists():  # the windows each kernel took, and why
                    rows = json.loads((ws / "bench.json").read_text()).get("rows", [])
                    row["kernels"] = {
                        x["kernel"]: [
                            round((x.get("median_s") or 0) * 1e6, 1),
                            x.get("windows"),
                            x.get("windows_stop"),
                        ]
                        for x in rows
                    }
                    row.pop("stdout_tail")
                out[f"{label} {' '.join(limit) or 'default limits'} round {r + 1}"] = row
    return out


def _supervisor(ws: Path, **options: Any) -> Any:
    from warp_harness.daemon.options import RuntimeOptions
    from warp_harness.daemon.supervisor import Supervisor

    return Supervisor(ws, RuntimeOptions().merged({"devices": [DEVICE], "seed": 7, **options}))


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


def _timed_verdict_worker() -> tuple[dict[str, float], Any]:
    """Wraps the supervisor's verdict-worker call and its wait for it with clocks: how long the
    references took and how long the supervisor waited for them after the kernel worker."""
    from warp_harness.daemon import supervisor as S

    spent: dict[str, float] = {}
    refs, join = S.Supervisor._references, S._VerdictJob.join

    def timed_refs(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.monotonic()
        try:
            return refs(self, *a, **k)
        finally:
            spent["verdict_references_s"] = spent.get("verdict_references_s", 0.0) + time.monotonic() - t0

    def timed_join(self: Any, *a: Any, **k: Any) -> Any:
        t0 = time.monotonic()
        try:
            return join(self, *a, **k)
        finally:
            spent["verdict_wait_after_kernel_worker_s"] = time.monotonic() - t0

    S.Supervisor._references = timed_refs  # type: ignore[method-assign]
    S._VerdictJob.join = timed_join  # type: ignore[method-assign]

    def undo() -> None:
        S.Supervisor._references = refs  # type: ignore[method-assign]
        S._VerdictJob.join = join  # type: ignore[method-assign]

    return spent, undo


def stream(**options: Any) -> dict[str, Any]:
    spent, undo = _timed_verdict_worker()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        shutil.copy(EXAMPLES / "stream_large.py", ws / "stream_large.py")
        t0 = time.monotonic()
        try:
            with _supervisor(ws, **options) as sup:
                r = sup.check(ws / "stream_large.py").to_dict()
        finally:
            undo()
        wall = time.monotonic() - t0
    bench = {k: (v.get("bench") or {}).get(DEVICE) for k, v in (r.get("kernels") or {}).items()}
    return {
        **_summary(r),
        "wall_s": round(wall, 2),
        "timings": {k: round(v) if isinstance(v, float) else v for k, v in (r.get("timings") or {}).items()},
        "verdict_worker": {k: round(v, 2) for k, v in spent.items()},
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
            elif what == "ci":
                results[what] = ci()
            elif what == "daemon":
                results[what] = daemon()
            elif what == "turn2":
                results[what] = turn2(Path(wanted[wanted.index("turn2") + 1]))
            else:
                continue
        except Exception as exc:  # keep the other parts
            results[what] = {"error": repr(exc)}
        results.setdefault("seconds", {})[what] = round(time.monotonic() - t0, 1)
        name = f"issue36-{os.environ.get('TAG', 'run')}.json"
        (outdir / name).write_text(json.dumps(results, indent=1, default=str))
        print(f"== {what}\n{json.dumps(results[what], indent=1, default=str)[:6000]}", flush=True)


if __name__ == "__main__":
    main()
