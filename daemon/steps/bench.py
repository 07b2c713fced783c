"""Step ``bench``: time kernels that passed validation, the same way every time.

Warm-up launches are excluded; every timed launch is synchronised (CUDA: a pair of timing
events around the launch; CPU, where launches are synchronous and events do not exist:
``perf_counter`` around launch + synchronise); input buffers rotate between launches so a
kernel cannot replay a result; many repeats, median and spread. With the contract's
bytes/FLOPs the achieved bandwidth/FLOP rate and their share of the peak are reported and
the declared targets are checked.
"""

from __future__ import annotations

import importlib
import statistics
import time
from typing import Any

import numpy as np
import warp as _warp

from warp_harness.contract import Target
from warp_harness.daemon import findings as F
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.steps import Job, KernelInfo
from warp_harness.daemon.steps.launching import block_dim_of, launch
from warp_harness.daemon.steps.validate import (
    ContractProblem,
    _dim,
    _numpy_dtype,
    contract_at,
    make_inputs,
    memory_record,
)
from warp_harness.record import Severity, Stage

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped

is_array = importlib.import_module("warp._src.types").is_array

ROTATE_MAX_BYTES = 256 << 20  # host-made input sets
DEVICE_ROTATE_MAX_BYTES = 16 << 30  # CUDA: extra allocations of the same data (see _launch_sets)
DEVICE_ROTATE_SETS = 5
IMPLAUSIBLE_FACTOR = 1.5
PROGRESS_EVERY_S = 0.1
WARMUP_MAX_LAUNCHES = 100_000
MIN_TIME_MAX_LAUNCHES = 100_000
WINDOW_WARMUP_S = 0.02  # warm-up before each window after the first (the clock is still up)


def _profile_peaks(profile: str) -> tuple[float | None, float | None]:
    """(peak GB/s, peak FP32 GFLOP/s) of a bundled hardware profile, when it exists."""
    try:
        from warp_harness.hardware import load_profile
    except ImportError:
        return None, None
    try:
        p = load_profile(profile)
    except Exception:
        return None, None
    bw = float(p.peak_bandwidth_gbs) or None
    fl = float(p.peak_fp32_tflops) * 1e3 or None
    return bw, fl


def profile_name(device: Any) -> str:
    if getattr(device, "is_cuda", False) and getattr(device, "arch", None):
        return f"sm_{device.arch}"
    return "cpu"


def peaks(job: Job, alias: str, device: Any = None) -> tuple[float | None, float | None]:
    """Peaks from [tool.warp-harness.runtime] first, then the device's hardware profile."""
    kind = alias.split(":")[0]
    bw = job.options.peak_bandwidth_gbs.get(alias, job.options.peak_bandwidth_gbs.get(kind))
    fl = job.options.peak_gflops.get(alias, job.options.peak_gflops.get(kind))
    if bw is None or fl is None:
        pbw, pfl = _profile_peaks(job.options.profile or profile_name(device))
        bw = bw if bw is not None else pbw
        fl = fl if fl is not None else pfl
    return bw, fl


def _launch_sets(
    job: Job, info: KernelInfo, alias: str, device: Any, size: int
) -> tuple[list[list[Any]], Any, int | None]:
    contract = info.contract
    assert contract is not None
    params = [(a.label, a.type) for a in info.runnable.adj.args]
    sets: list[list[Any]] = []
    dim: Any = None
    block_dim: int | None = None
    n_sets = 3
    hosts: list[tuple[Any, Any]] = []  # (host value, arg type) of the last set made
    nbytes = 0
    for k in range(n_sets):
        inputs = make_inputs(contract.inputs, size, job.seed + 5000 + k)
        args: list[Any] = []
        hosts = []
        nbytes = 0
        for name, arg_type in params:
            value = inputs[name]
            if is_array(arg_type):
                host = np.ascontiguousarray(value, dtype=_numpy_dtype(arg_type))
                nbytes += host.nbytes
                arr = wp.array(host, dtype=arg_type.dtype, device=device)
                args.append(arr)
                hosts.append((host, arg_type))
                if dim is None and name == contract.outputs[0]:
                    dim = _dim(contract, size, inputs, arr)
                    block_dim = block_dim_of(contract, size, inputs)
            else:
                args.append(value)
                hosts.append((value, None))
        sets.append(args)
        if nbytes * n_sets > ROTATE_MAX_BYTES:
            break
    if getattr(device, "is_cuda", False) and len(sets) < n_sets:
        # Too big to make n_sets of on the host, far past any cache: upload the same data into
        # fresh device allocations instead. The time of a memory-bound kernel depends on where
        # its buffers landed (seen on an H200: one allocation in five 4-5% slower, the same
        # within 0.2% otherwise); the median over launches rotating between allocations is
        # not at the mercy of one of them.
        free = float(getattr(device, "free_memory", 0) or 0)
        while len(sets) < DEVICE_ROTATE_SETS and nbytes * (len(sets) + 1) <= min(
            DEVICE_ROTATE_MAX_BYTES, free / 2
        ):
            sets.append([wp.array(v, dtype=t.dtype, device=device) if t is not None else v for v, t in hosts])
    return sets, dim, block_dim


def measure(job: Job, info: KernelInfo, alias: str, device: Any, size: int) -> dict[str, Any]:
    sets, dim, block_dim = _launch_sets(job, info, alias, device, size)
    kernel = info.runnable
    contract = info.contract
    assert contract is not None
    opts = job.options
    last_progress = 0.0

    def beat(now: float) -> None:
        # Each launch may take launch_timeout_s. A progress message before every launch (50
        # round trips through the supervisor to every client) would cost more than the
        # launches of a small kernel: the heartbeat goes at most every PROGRESS_EVERY_S, and
        # its budget covers that interval too, so every launch still gets its full budget.
        nonlocal last_progress
        job.progress(
            stage=Step.BENCH.value,
            kernel=info.name,
            device=alias,
            size=size,
            seed=job.seed,
            budget_s=opts.launch_timeout_s + PROGRESS_EVERY_S,
        )
        last_progress = now

    use_events = bool(getattr(device, "is_cuda", False))

    def warm_up(count: int, for_s: float) -> None:
        until = time.perf_counter() + for_s
        n = 0
        while n < count or (time.perf_counter() < until and n < WARMUP_MAX_LAUNCHES):
            launch(contract, kernel, dim=dim, inputs=sets[n % len(sets)], device=device, block_dim=block_dim)
            if use_events:
                wp.synchronize_device(device)
            n += 1
            now = time.perf_counter()
            if now - last_progress >= PROGRESS_EVERY_S:
                beat(now)
        wp.synchronize_device(device)

    def timed_launch(args: list[Any]) -> float:
        if not use_events:
            t0 = time.perf_counter()
            launch(contract, kernel, dim=dim, inputs=args, device=device, block_dim=block_dim)
            wp.synchronize_device(device)
            return time.perf_counter() - t0
        start_ev = wp.Event(device, enable_timing=True)
        end_ev = wp.Event(device, enable_timing=True)
        # on the device's own stream: wp.record_event() uses the *current* device's stream,
        # which is cuda:0's unless a ScopedDevice says otherwise
        stream = device.stream
        stream.record_event(start_ev)
        launch(contract, kernel, dim=dim, inputs=args, device=device, block_dim=block_dim, stream=stream)
        stream.record_event(end_ev)
        wp.synchronize_event(end_ev)
        return float(wp.get_event_elapsed_time(start_ev, end_ev)) / 1e3

    # warm-up: bench_warmup launches and, on CUDA, at least bench_warmup_s of them (each one
    # synchronised): a GPU that idled while the inputs were made runs at a low clock, and a
    # few 1 ms launches do not bring it back (measured on an H200: medians 4-5% apart
    # between runs of the same kernel with 3 warm-up launches)
    beat(time.perf_counter())
    warm_up(opts.bench_warmup, opts.bench_warmup_s if use_events else 0.0)
    # On CUDA the launches are timed in bench_windows windows bench_window_gap_s apart, and the
    # time reported is the best window's median. On an H200 the same launch on the same buffers
    # ran up to 7% slower in some windows than in others a few hundred ms away, at constant SM
    # and memory clocks with no throttle reason (benchmarks/RESULTS.md, runs 7-8): a state of the
    # device, not of the kernel, that only ever slows it down. One window of any length is at
    # its mercy (medians of 5 runs up to 6% apart); the best of 5 windows 0.2 s apart still
    # missed 2% in 2 of 6 sets of runs, the best of 15 windows 0.1 s apart held (0.16-0.97%),
    # 25 windows with no idle gap between them did not (3.46%). About 2 s per kernel and device;
    # bench_windows = 1 is one window (the median of all launches).
    windows = max(1, opts.bench_windows) if use_events else 1
    per_window = max(1, -(-opts.bench_repeats // windows))
    # on CUDA also for at least bench_min_time_s in all: 50 launches of a 0.5 ms kernel are too
    # short (H200: medians of 5 runs 2.8% apart; with 0.2 s of launches 0.3% when no window is slow)
    per_window_s = min(opts.bench_min_time_s, opts.bench_max_time_s) / windows if use_events else 0.0
    times: list[float] = []
    by_set: list[list[float]] = [[] for _ in sets]
    window_medians: list[float] = []
    timed_s = 0.0
    i = 0
    for w in range(windows):
        if w:
            time.sleep(opts.bench_window_gap_s)
            warm_up(opts.bench_warmup, min(WINDOW_WARMUP_S, opts.bench_warmup_s))
        window: list[float] = []
        started = time.perf_counter()
        beat(started)
        until = started + per_window_s
        while len(window) < per_window or (
            time.perf_counter() < until and len(window) < MIN_TIME_MAX_LAUNCHES
        ):
            args = sets[i % len(sets)]
            own = by_set[i % len(sets)]
            i += 1
            window.append(timed_launch(args))
            own.append(window[-1])
            now = time.perf_counter()
            if len(times) + len(window) >= 5 and timed_s + now - started > opts.bench_max_time_s:
                break
            if now - last_progress >= PROGRESS_EVERY_S:
                beat(now)
        timed_s += time.perf_counter() - started
        times += window
        window_medians.append(statistics.median(window))
        if len(times) >= 5 and timed_s > opts.bench_max_time_s:
            break
    pooled = statistics.median(times)
    times.sort()
    median = min(window_medians) if len(window_medians) > 1 else pooled
    q1 = times[len(times) // 4]
    q3 = times[(3 * len(times)) // 4]
    out: dict[str, Any] = {
        "size": size,
        "repeats": len(times),
        "median_s": median,
        "min_s": times[0],
        "max_s": times[-1],
        "iqr_s": q3 - q1,
        "pooled_median_s": pooled,
        "windows": len(window_medians),
        "window_medians_s": window_medians,
        "rotated_sets": len(sets),
        # one per rotated allocation: apart, the buffers' placement moves the time; together, a
        # slow spell of the device does (on the H200 they agreed within 0.6%, runs 7-8)
        "set_medians_s": [statistics.median(t) for t in by_set if t],
        "timer": "cuda events" if use_events else "perf_counter+synchronize",
    }
    if use_events:
        resources = kernel_resources(kernel, device, block_dim)
        if resources:
            out["resources"] = resources
    return out


def kernel_resources(kernel: Any, device: Any, block_dim: int | None) -> dict[str, int]:
    """Registers and local memory per thread of the compiled CUDA kernel ({} when unknown)."""
    names = {"register_count": "registers", "local_memory_size": "local_bytes"}
    try:
        props = wp.get_cuda_kernel_properties(kernel, device, block_dim)
        return {ours: int(props[theirs]) for theirs, ours in names.items() if props.get(theirs) is not None}
    except Exception:
        return {}


def bench_kernel(job: Job, info: KernelInfo, alias: str, device: Any) -> None:
    contract = info.contract
    assert contract is not None
    size = contract.benchmark_size
    try:
        m = measure(job, info, alias, device, size)
    except MemoryError:
        job.add(memory_record(job, info, alias, "benchmark"))
        return
    except ContractProblem as exc:
        line, col, end_col = contract_at(job, info)
        job.add(
            F.make_record(
                Stage.PERFORMANCE,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                job.display_path,
                line,
                f"benchmark of `{info.name}`: {exc}",
                col=col,
                end_col=end_col,
                kernel=info.name,
            )
        )
        return
    median = m["median_s"]
    metrics: dict[str, float] = {"latency_us": median * 1e6, "time_ms": median * 1e3}
    peak_bw, peak_fl = peaks(job, alias, device)
    m["peaks"] = {
        "bandwidth_gbs": peak_bw,
        "gflops": peak_fl,
        "profile": job.options.profile or profile_name(device),
    }
    if contract.bytes is not None and median > 0:
        metrics["bandwidth_gbs"] = float(contract.bytes(size)) / median / 1e9
        if peak_bw:
            metrics["bandwidth_util"] = metrics["bandwidth_gbs"] / peak_bw
    if contract.flops is not None and median > 0:
        metrics["gflops"] = float(contract.flops(size)) / median / 1e9
        if peak_fl:
            metrics["flops_util"] = metrics["gflops"] / peak_fl
    resources = m.get("resources") or {}
    if resources.get("registers") is not None:
        metrics["registers_per_thread"] = float(resources["registers"])
    if resources.get("local_bytes") is not None:
        metrics["local_bytes_per_thread"] = float(resources["local_bytes"])
    m["metrics"] = metrics
    info.bench[alias] = m
    spread = (
        f"best of {m['windows']} windows; all launches: median {m['pooled_median_s'] * 1e6:.1f}, "
        if m["windows"] > 1
        else ""
    )
    parts = [
        f"median {metrics['latency_us']:.1f} µs ({spread}min {m['min_s'] * 1e6:.1f}, "
        f"max {m['max_s'] * 1e6:.1f}, IQR {m['iqr_s'] * 1e6:.1f}, n={m['repeats']})"
    ]
    if "bandwidth_gbs" in metrics:
        parts.append(f"{metrics['bandwidth_gbs']:.2f} GB/s")
        if "bandwidth_util" in metrics:
            parts.append(f"{metrics['bandwidth_util'] * 100:.1f}% of {peak_bw:g} GB/s peak")
    if "gflops" in metrics:
        parts.append(f"{metrics['gflops']:.2f} GFLOP/s")
        if "flops_util" in metrics:
            parts.append(f"{metrics['flops_util'] * 100:.1f}% of {peak_fl:g} GFLOP/s peak")
    job.add(
        F.make_record(
            Stage.PERFORMANCE,
            F.MEASURED,
            Severity.INFO,
            job.display_path,
            info.line,
            f"kernel `{info.name}` on {alias}, size {size}: " + ", ".join(parts),
            col=info.col,
            end_col=info.end_col,
            kernel=info.name,
            actual=metrics,
        )
    )
    for util in ("bandwidth_util", "flops_util"):
        if metrics.get(util, 0.0) > IMPLAUSIBLE_FACTOR:
            job.add(
                F.make_record(
                    Stage.PERFORMANCE,
                    F.IMPLAUSIBLE,
                    Severity.WARNING,
                    job.display_path,
                    info.line,
                    f"kernel `{info.name}` on {alias}: {util} = {metrics[util]:.2f} "
                    "is beyond the hardware peak",
                    kernel=info.name,
                    hint="check the contract's bytes/flops functions and that the kernel does all its work",
                )
            )
    severity = Severity(job.options.perf_severity)
    m["targets"] = [
        {
            "target": str(target),
            "value": metrics.get(target.metric),
            "verdict": check_target(job, info, alias, target, metrics, severity),
        }
        for target in contract.parsed_targets()
    ]


def check_target(
    job: Job, info: KernelInfo, alias: str, target: Target, metrics: dict[str, float], severity: Severity
) -> str:
    """Report a missed or unchecked target; the verdict: ``met``, ``missed`` or ``unchecked``."""
    value = metrics.get(target.metric)
    if value is None:
        need = {"bandwidth_gbs": "`bytes`", "gflops": "`flops`"}.get(target.metric, "")
        why = (
            f"the contract gives no {need}"
            if need
            else "no peak for this device: set peak_bandwidth_gbs / peak_gflops in "
            "[tool.warp-harness.runtime] (or give the contract bytes/flops)"
        )
        job.add(
            F.make_record(
                Stage.PERFORMANCE,
                F.TARGET_UNCHECKED,
                Severity.WARNING,
                job.display_path,
                info.line,
                f"kernel `{info.name}` on {alias}: target `{target}` not checked: {why}",
                kernel=info.name,
            )
        )
        return "unchecked"
    if target.holds(value):
        return "met"
    job.add(
        F.make_record(
            Stage.PERFORMANCE,
            F.TARGET_MISSED,
            severity,
            job.display_path,
            info.line,
            f"kernel `{info.name}` on {alias} misses its target `{target}`: "
            f"measured {target.metric} = {value:.4g}",
            col=info.col,
            end_col=info.end_col,
            kernel=info.name,
            expected=target.value,
            actual=value,
            hint="profile the kernel: memory access pattern (coalescing), work per thread, launch dim",
        )
    )
    return "missed"


def run(job: Job) -> None:
    t0 = time.perf_counter()
    for info in job.kernels.values():
        if info.contract is None or info.name in job.skip:
            continue
        for alias, device in job.devices:
            if info.validate.get(alias) == "pass":
                bench_kernel(job, info, alias, device)
    job.timings["bench_ms"] = (time.perf_counter() - t0) * 1e3
