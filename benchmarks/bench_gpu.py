"""Issue 6 on a real GPU, in one run: calibrate, fidelity, repeatability, the race.

    python benchmarks/bench_gpu.py --device cuda:0 --out DIR     # on the H200 (see benchmarks/RESULTS.md)
    python benchmarks/bench_gpu.py --device cpu --small          # a smoke test of this script anywhere

1. calibrate: ``warp_harness.daemon.calibrate`` on the device; the profile goes to DIR/profile.toml.
2. fidelity: for large memory-bound kernels (examples/contracts/stream_large.py) the benchmark
   stage's median (``stages.bench.bench_kernel``, in this process) against independent figures
   of the same run: torch CUDA events around the bare ``wp.launch`` on a torch stream,
   ``triton.testing.do_bench`` (median), and a host clock around synchronised launches.
   Must agree within 5%; the best known-good kernel must reach >= 85% of the calibrated copy
   bandwidth.
3. repeatability: the same kernel through the benchmark stage 5 times: median to median < 2%.
4. the CLI: ``python -m warp_harness.daemon bench`` (worker subprocess, the daemon's real
   stages) over stream_large.py with the calibrated profile, and over race_sum.py on the GPU
   (the non-atomic sum must fail validation) and on the CPU (where it passes).

Full results: DIR/results.json; a short table is printed last.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from warp_harness.launch import module_command

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "contracts"


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


BENCH_OVERRIDES: dict[str, float | int] = {}  # RuntimeOptions fields set from the command line


def harness_bench(kernel: Any, contract: Any, device: str, profile: str | None, seed: int) -> dict[str, Any]:
    """The benchmark stage itself (stages.bench.bench_kernel) on one kernel, in this process."""
    import warp as wp

    from warp_harness.daemon.options import RuntimeOptions
    from warp_harness.daemon.steps import JobSpec, KernelInfo, StepContext
    from warp_harness.daemon.steps import bench as bench_stage

    opts = RuntimeOptions(
        devices=(device,),
        bench_repeats=50,
        bench_max_time_s=3.0,
        bench_warmup=3,
        profile=profile,
        **BENCH_OVERRIDES,  # type: ignore[arg-type]
    )
    spec = JobSpec(
        id=0,
        path=EXAMPLES / "stream_large.py",
        display_path="examples/contracts/stream_large.py",
        workspace=EXAMPLES,
        options=opts,
        seed=seed,
    )
    ctx = StepContext(spec, progress=lambda **_: None)
    info = KernelInfo(contract.kernel_name, 1, 0, 0, kernel=kernel, runnable=kernel, contract=contract)
    bench_stage.bench_kernel(ctx, info, device, wp.get_device(device))
    measured = ctx.verdicts_of(info.name).bench
    if device not in measured:
        raise RuntimeError(
            "; ".join(r.message for r in ctx.records) or "the benchmark stage measured nothing"
        )
    return measured[device]


def independent(kernel: Any, contract: Any, device: str) -> dict[str, Any]:
    """Times of the bare launch, measured without the harness's code."""
    import numpy as np
    import warp as wp
    from warp._src.types import is_array

    size = contract.benchmark_size
    inputs = contract.inputs(size, np.random.default_rng(99))
    args = []
    for a in kernel.adj.args:
        value = inputs[a.label]
        args.append(wp.array(value, dtype=a.type.dtype, device=device) if is_array(a.type) else value)
    dev = wp.get_device(device)
    out: dict[str, Any] = {}

    def launch(stream: Any = None) -> None:
        wp.launch(kernel, dim=size, inputs=args, device=dev, stream=stream)

    for _ in range(3):
        launch()
    wp.synchronize_device(dev)
    n = 20
    t0 = time.perf_counter()
    for _ in range(n):
        launch()
        wp.synchronize_device(dev)
    out["host_clock_s"] = (time.perf_counter() - t0) / n
    if not dev.is_cuda:
        return out
    try:
        import torch

        ts = torch.cuda.Stream(device=f"cuda:{dev.ordinal}")
        ws = wp.stream_from_torch(ts)
        for _ in range(3):
            launch(ws)
        ts.synchronize()

        def timed() -> float:
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record(ts)
            launch(ws)
            e1.record(ts)
            e1.synchronize()
            return float(e0.elapsed_time(e1)) / 1e3

        times = [timed() for _ in range(50)]
        out["torch_events_median_s"] = statistics.median(times)
        out["torch_events_min_s"] = min(times)
        out["torch_events_max_s"] = max(times)
        # the same torch events in the benchmark stage's default protocol (bench_windows windows,
        # bench_window_gap_s apart, of bench_min_time_s in all; the best window's median), so that a
        # slow spell of the device in one of the two measurements is not taken for a difference
        from warp_harness.daemon.options import RuntimeOptions

        protocol = RuntimeOptions()
        window_medians = []
        for w in range(protocol.bench_windows):
            if w:
                time.sleep(protocol.bench_window_gap_s)
            for _ in range(5):
                launch(ws)
            ts.synchronize()
            window = []
            until = time.perf_counter() + protocol.bench_min_time_s / protocol.bench_windows
            while len(window) < 10 or time.perf_counter() < until:
                window.append(timed())
            window_medians.append(statistics.median(window))
        out["torch_events_window_medians_s"] = window_medians
        out["torch_events_best_window_s"] = min(window_medians)
        try:
            import triton.testing

            with torch.cuda.stream(ts):
                ms = triton.testing.do_bench(lambda: launch(ws), warmup=25, rep=200, return_mode="median")
            out["do_bench_median_s"] = float(ms) / 1e3
        except Exception as exc:  # triton missing or a different API
            out["do_bench_error"] = repr(exc)
    except Exception as exc:
        out["torch_error"] = repr(exc)
    return out


def allocations(kernel: Any, contract: Any, device: str, count: int = 5) -> list[float]:
    """Median event time of the bare launch in each of ``count`` fresh allocations of the same
    data (all alive at once): how much the placement of the buffers alone moves the time."""
    import numpy as np
    import warp as wp
    from warp._src.types import is_array

    size = contract.benchmark_size
    inputs = contract.inputs(size, np.random.default_rng(5))
    dev = wp.get_device(device)
    sets = [
        [
            wp.array(inputs[a.label], dtype=a.type.dtype, device=device)
            if is_array(a.type)
            else inputs[a.label]
            for a in kernel.adj.args
        ]
        for _ in range(count)
    ]
    medians = []
    for args in sets:
        stream = dev.stream
        for _ in range(20):
            wp.launch(kernel, dim=size, inputs=args, device=dev)
        times = []
        for _ in range(30):
            e0 = wp.Event(dev, enable_timing=True)
            e1 = wp.Event(dev, enable_timing=True)
            stream.record_event(e0)
            wp.launch(kernel, dim=size, inputs=args, device=dev, stream=stream)
            stream.record_event(e1)
            times.append(wp.get_event_elapsed_time(e0, e1) / 1e3)
        medians.append(statistics.median(times))
    return medians


class ClockLog:
    """``nvidia-smi`` sampling the device's clocks, power and temperature every ``period_ms`` in the
    background, each sample stamped with this host's clock on arrival; ``window`` summarises the
    samples taken while one measurement ran (so a slow run can be told from a clock or power step)."""

    FIELDS = ("clocks.sm", "clocks.mem", "temperature.gpu", "power.draw", "clocks_event_reasons.active")

    def __init__(self, ordinal: int, period_ms: int = 100) -> None:
        import threading

        self.samples: list[tuple[float, list[str]]] = []
        self.error: str | None = None
        try:
            self.proc: subprocess.Popen[str] | None = subprocess.Popen(
                [
                    "nvidia-smi",
                    f"--query-gpu={','.join(self.FIELDS)}",
                    "--format=csv,noheader,nounits",
                    "-i",
                    str(ordinal),
                    "-lms",
                    str(period_ms),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        except OSError as exc:
            self.proc, self.error = None, repr(exc)
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == len(self.FIELDS):
                self.samples.append((time.time(), parts))
            elif self.error is None:
                self.error = line.strip()

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        rows = [v for t, v in self.samples if t0 <= t <= t1]
        out: dict[str, Any] = {"samples": len(rows)}
        for k, name in enumerate(("sm_mhz", "mem_mhz", "temp_c", "power_w")):
            vals = [float(r[k]) for r in rows if r[k].replace(".", "", 1).isdigit()]
            if vals:
                out[name] = [min(vals), statistics.median(vals), max(vals)]
        out["reasons"] = sorted({r[4] for r in rows})
        return out

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def run_cli(args: list[str], env: dict[str, str], timeout: float = 400) -> dict[str, Any]:
    cmd = module_command("warp_harness.daemon", "bench", *args)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=str(REPO))
    return {
        "command": " ".join(["warp-harness bench", *args]),
        "rc": p.returncode,
        "stdout": p.stdout,
        "stderr": p.stderr[-4000:],
        "wall_s": time.perf_counter() - t0,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/bench_gpu")
    ap.add_argument("--small", action="store_true", help="small sizes (a smoke test of the script)")
    ap.add_argument("--no-gemm", action="store_true", help="calibrate: copy bandwidth and attributes only")
    ap.add_argument("--skip", action="append", default=[], help="skip a section by name")
    ap.add_argument("--repeat-rounds", type=int, default=1, help="repeatability: rounds of 5 runs per kernel")
    ap.add_argument("--bench-warmup-s", type=float, help="RuntimeOptions.bench_warmup_s for the harness")
    ap.add_argument("--bench-min-time-s", type=float, help="RuntimeOptions.bench_min_time_s for the harness")
    ap.add_argument("--bench-windows", type=int, help="RuntimeOptions.bench_windows for the harness")
    ap.add_argument("--bench-window-gap-s", type=float, help="RuntimeOptions.bench_window_gap_s")
    ap.add_argument(
        "--bench-windows-agree", type=int, help="RuntimeOptions.bench_windows_agree (15: never early)"
    )
    ap.add_argument("--bench-windows-within", type=float, help="RuntimeOptions.bench_windows_within")
    a = ap.parse_args()
    keys = ("bench_warmup_s", "bench_min_time_s", "bench_windows", "bench_window_gap_s")
    for key in (*keys, "bench_windows_agree", "bench_windows_within"):
        if getattr(a, key) is not None:
            BENCH_OVERRIDES[key] = getattr(a, key)
    results_overrides = dict(BENCH_OVERRIDES)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "host": platform.node(),
        "python": sys.version.split()[0],
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "device": a.device,
        "errors": {},
        "bench_overrides": results_overrides,
    }

    def save() -> None:
        (out / "results.json").write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")

    def section(name: str, fn: Any) -> Any:
        if name in a.skip:
            return None
        t0 = time.perf_counter()
        print(f"== {name}", flush=True)
        try:
            value = fn()
            results[name] = value
            return value
        except Exception as exc:
            results["errors"][name] = f"{exc!r}\n{traceback.format_exc()}"
            print(f"!! {name} failed: {exc!r}", flush=True)
            return None
        finally:
            results.setdefault("section_s", {})[name] = time.perf_counter() - t0
            save()

    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    results["warp_version"] = wp.config.version
    dev = wp.get_device(a.device)
    results["device_name"] = dev.name
    from warp_harness.daemon import calibrate

    profile_path = out / "profile.toml"

    def do_calibrate() -> dict[str, Any]:
        cal = calibrate.calibrate(a.device, gemm=not a.no_gemm, reference=not a.no_gemm)
        calibrate.write_profile(cal, profile_path)
        print(calibrate.summary(cal), flush=True)
        from warp_harness.hardware import load_profile

        prof = load_profile(str(profile_path))  # it must load
        return {
            "measurements": [m.to_dict() for m in cal.measurements],
            "properties": cal.properties,
            "profile": dataclasses.asdict(prof),
        }

    cal = section("calibrate", do_calibrate)
    copy_gbs = None
    if cal:
        copy_gbs = next(m["rate"] for m in cal["measurements"] if m["name"] == "copy")
    profile = str(profile_path) if profile_path.is_file() else None

    mod = _load(EXAMPLES / "stream_large.py")
    cases = [
        ("saxpy_large", mod.saxpy_large, mod.saxpy_contract),
        ("copy_f32", mod.copy_f32, mod.copy_contract),
        ("copy_vec4", mod.copy_vec4, mod.copy_vec4_contract),
    ]
    if a.small:
        cases = [
            (n, k, dataclasses.replace(c, bench_size=max(1, c.benchmark_size >> 8))) for n, k, c in cases
        ]

    def do_fidelity() -> dict[str, Any]:
        rows = {}
        for name, kernel, contract in cases:
            h = harness_bench(kernel, contract, a.device, profile, seed=11)
            ind = independent(kernel, contract, a.device)
            ref = ind.get("torch_events_best_window_s") or ind["host_clock_s"]
            row = {
                "size": contract.benchmark_size,
                "harness_median_s": h["median_s"],
                "harness_iqr_s": h["iqr_s"],
                "harness_repeats": h["repeats"],
                "timer": h["timer"],
                "metrics": h["metrics"],
                "targets": h.get("targets"),
                "independent": ind,
                "reference": f"torch events, best of {len(ind['torch_events_window_medians_s'])} windows"
                if "torch_events_best_window_s" in ind
                else "host clock",
                "deviation": h["median_s"] / ref - 1.0,
                "harness_pooled_median_s": h.get("pooled_median_s"),
                "harness_window_medians_s": h.get("window_medians_s"),
            }
            if "torch_events_median_s" in ind:
                row["deviation_one_window"] = h["median_s"] / ind["torch_events_median_s"] - 1.0
            if "do_bench_median_s" in ind:
                row["deviation_do_bench"] = h["median_s"] / ind["do_bench_median_s"] - 1.0
            if copy_gbs:
                row["of_copy_bw"] = h["metrics"].get("bandwidth_gbs", 0.0) / copy_gbs
            rows[name] = row
            print(
                f"{name}: harness {h['median_s'] * 1e3:.4f} ms, {row['reference']} {ref * 1e3:.4f} ms "
                f"({row['deviation'] * 100:+.2f}%), {h['metrics'].get('bandwidth_gbs', 0):.0f} GB/s",
                flush=True,
            )
        return rows

    fid = section("fidelity", do_fidelity)

    def do_repeat() -> dict[str, Any]:
        rows: dict[str, Any] = {}
        clocks = ClockLog(dev.ordinal) if dev.is_cuda else None
        try:
            for rnd in range(a.repeat_rounds):
                for name, kernel, contract in cases:
                    runs = []
                    for k in range(5):
                        t0 = time.time()
                        h = harness_bench(kernel, contract, a.device, profile, seed=20 + k)
                        t1 = time.time()
                        runs.append(
                            {
                                "median_s": h["median_s"],
                                "pooled_median_s": h.get("pooled_median_s"),
                                "window_medians_s": h.get("window_medians_s"),
                                "windows_stop": h.get("windows_stop"),
                                "repeats": h["repeats"],
                                "set_medians_s": h.get("set_medians_s"),
                                "t": [t0, t1],
                                "clocks": clocks.window(t0, t1) if clocks else None,
                            }
                        )
                    medians = [r["median_s"] for r in runs]
                    key = name if rnd == 0 else f"{name}#{rnd + 1}"
                    pooled = [r["pooled_median_s"] or r["median_s"] for r in runs]
                    rows[key] = {
                        "medians_s": medians,
                        "spread": (max(medians) - min(medians)) / min(medians),
                        "pooled_spread": (max(pooled) - min(pooled)) / min(pooled),
                        "runs": runs,
                    }
                    print(f"{key}: medians {[round(m * 1e3, 4) for m in medians]} ms", flush=True)
                    for r in runs:
                        print(
                            f"    windows ({r['windows_stop']}) "
                            f"{[round(m * 1e3, 4) for m in r['window_medians_s'] or []]} "
                            f"sets {[round(m * 1e3, 4) for m in r['set_medians_s'] or []]} "
                            f"clocks {r['clocks']}",
                            flush=True,
                        )
        finally:
            if clocks:
                clocks.stop()
                results["clock_log_error"] = clocks.error
        return rows

    rep = section("repeatability", do_repeat)

    def do_alloc() -> dict[str, Any]:
        rows = {}
        for name, kernel, contract in cases[:2]:
            med = allocations(kernel, contract, a.device)
            rows[name] = {"medians_s": med, "spread": (max(med) - min(med)) / min(med)}
            print(f"{name}: per-allocation medians {[round(m * 1e3, 4) for m in med]} ms", flush=True)
        return rows

    alloc = section("allocations", do_alloc) if dev.is_cuda else None

    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"

    def do_cli() -> dict[str, Any]:
        runs: dict[str, Any] = {}
        common = ["--trust", "--seed", "7", "--memory-mb", "48000"]
        if not a.small:
            prof_args = ["--profile", profile] if profile else []
            runs["stream_large"] = run_cli(
                ["examples/contracts/stream_large.py", "--device", a.device, *common, *prof_args], env
            )
            print(runs["stream_large"]["stdout"], flush=True)
        runs["race_gpu"] = run_cli(
            ["examples/contracts/race_sum.py", "--device", a.device, *common, "--format", "json"], env
        )
        runs["race_cpu"] = run_cli(
            ["examples/contracts/race_sum.py", "--device", "cpu", *common, "--format", "json"], env
        )
        for key in ("race_gpu", "race_cpu"):
            try:
                data = json.loads(runs[key]["stdout"])
                runs[key]["status"] = [r["status"] for r in data["rows"]]
                runs[key]["messages"] = [p.get("message") for p in data.get("problems", [])][:3]
            except Exception as exc:
                runs[key]["parse_error"] = repr(exc)
            print(key, runs[key].get("rc"), runs[key].get("status"), runs[key].get("messages"), flush=True)
        return runs

    cli = section("cli", do_cli)

    # ---------------------------------------------------------------- the short table
    verdict: dict[str, Any] = {}
    lines = [f"device {a.device} ({results.get('device_name')}), warp {results.get('warp_version')}"]
    if cal:
        for m in cal["measurements"]:
            lines.append(f"calibrate  {m['name']:22} {m['rate']:10.4g} {m['unit']}  ({m['detail'][:60]})")
        p = cal["profile"]
        lines.append(
            f"profile    sm_count {p['sm_count']}, smem/block {p['shared_memory_per_block']} "
            f"(opt-in {p['shared_memory_per_block_optin']}), peak {p['peak_bandwidth_gbs']} GB/s, "
            f"{p['peak_fp32_tflops']} fp32 TFLOP/s"
        )
    if fid:
        for name, r in fid.items():
            ind = r["independent"]
            lines.append(
                f"fidelity   {name:12} harness {r['harness_median_s'] * 1e3:8.4f} ms | torch events "
                f"best window {(ind.get('torch_events_best_window_s') or 0) * 1e3:8.4f}, "
                f"one window {(ind.get('torch_events_median_s') or 0) * 1e3:8.4f} | do_bench "
                f"{(ind.get('do_bench_median_s') or 0) * 1e3:8.4f} | "
                f"host {ind['host_clock_s'] * 1e3:8.4f} ms | "
                f"dev {r['deviation'] * 100:+.2f}% | {r['metrics'].get('bandwidth_gbs', 0):7.0f} GB/s = "
                f"{r.get('of_copy_bw', 0) * 100:.1f}% of copy"
            )
        verdict["fidelity_within_5pct"] = all(abs(r["deviation"]) < 0.05 for r in fid.values())
        verdict["best_of_copy_bw"] = max(r.get("of_copy_bw", 0) for r in fid.values())
        verdict["bandwidth_ge_85pct"] = verdict["best_of_copy_bw"] >= 0.85
    if rep:
        for name, r in rep.items():
            lines.append(
                f"repeat     {name:12} medians {', '.join(f'{m * 1e3:.4f}' for m in r['medians_s'])} ms, "
                f"spread {r['spread'] * 100:.2f}% "
                f"(all launches' medians: {r.get('pooled_spread', 0) * 100:.2f}%), windows taken "
                f"{[len(x['window_medians_s'] or []) for x in r['runs']]}"
            )
        verdict["repeat_under_2pct"] = all(r["spread"] < 0.02 for r in rep.values())
    if alloc:
        for name, r in alloc.items():
            lines.append(
                f"placement  {name:12} bare-launch medians in 5 allocations "
                f"{', '.join(f'{m * 1e3:.4f}' for m in r['medians_s'])} ms, spread {r['spread'] * 100:.2f}%"
            )
    if cli:
        for key in ("race_gpu", "race_cpu"):
            lines.append(f"race       {key:12} rc {cli[key]['rc']} status {cli[key].get('status')}")
        verdict["race_caught_on_gpu"] = "validate:fail" in (cli["race_gpu"].get("status") or [])
        verdict["race_passes_on_cpu"] = cli["race_cpu"].get("status") == ["timed"]
    results["verdict"] = verdict
    save()
    lines.append(f"verdict    {json.dumps(verdict)}")
    if results["errors"]:
        lines.append(f"errors in: {', '.join(results['errors'])}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
