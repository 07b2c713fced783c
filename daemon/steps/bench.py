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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import warp as _warp

from warp_harness.contract import Target
from warp_harness.daemon import findings as F
from warp_harness.daemon.comparison import ContractProblem, OutputReport, compare, poison_like, within
from warp_harness.daemon.integrity import (
    TRUSTED,
    clock_disagrees,
    from_snapshot,
    persisting_l2_bytes,
    snapshot_bytes,
    to_numpy,
)
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.steps import KernelInfo, StepContext, StepOutcome, device_check
from warp_harness.daemon.steps.bench_windows import WindowStop, describe, spread, stop_after
from warp_harness.daemon.steps.launching import block_dim_of, end_if_context_lost, launch
from warp_harness.daemon.steps.stream_filler import StreamFiller
from warp_harness.daemon.steps.timed_digest import PendingDigest
from warp_harness.daemon.steps.validate import (
    REVALIDATE_SEED,
    TIMED_SEED,
    _dim,
    _numpy_dtype,
    contract_at,
    make_inputs,
    memory_record,
    reference_outputs,
    ship_timed_outputs,
)
from warp_harness.record import Severity, Stage

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped

is_array = importlib.import_module("warp._src.types").is_array

ROTATE_MAX_BYTES = device_check.ROTATE_MAX_BYTES  # host-made input sets
DEVICE_ROTATE_MAX_BYTES = 16 << 30  # CUDA: extra allocations of the same data (see _launch_sets)
DEVICE_ROTATE_SETS = 5
IMPLAUSIBLE_FACTOR = 1.5
PROGRESS_EVERY_S = 0.1
WARMUP_MAX_LAUNCHES = 100_000
MIN_TIME_MAX_LAUNCHES = 100_000
WINDOW_WARMUP_S = 0.02  # warm-up before each window after the first (the clock is still up)
REVALIDATE_SETS = 1  # the buffers of the first set; more cost time on every save
PENDING_DIGEST_WAIT_S = 120.0  # the most the hashing of a timed set's inputs is waited for
COLD_L2_FLUSH_BYTES = 256 << 20  # written between launches for cold-L2 timing (> any L2 today)
_clock = TRUSTED.perf_counter  # the clock saved before any workspace code ran

# Called after the timed loop, before the check writes into the timed buffers, with (ctx, kernel,
# device alias, the rotated launch sets, launches timed): each set's output arrays still hold
# what the kernel's last timed launch on that set wrote (for its inputs, seed + 5000 + set
# index, as _launch_sets made them). For a comparison of the timed loop's own outputs against
# references (daemon/verdict.py); a hook that raises fails the benchmark of that kernel.
TimedBuffersHook = Callable[[StepContext, KernelInfo, str, list[list[Any]], int], None]
TIMED_BUFFERS_HOOKS: list[TimedBuffersHook] = []


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


def peaks(ctx: StepContext, alias: str, device: Any = None) -> tuple[float | None, float | None]:
    """Peaks from [tool.warp-harness.runtime] first, then the device's hardware profile."""
    kind = alias.split(":")[0]
    bw = ctx.options.peak_bandwidth_gbs.get(alias, ctx.options.peak_bandwidth_gbs.get(kind))
    fl = ctx.options.peak_gflops.get(alias, ctx.options.peak_gflops.get(kind))
    if bw is None or fl is None:
        pbw, pfl = _profile_peaks(ctx.options.profile or profile_name(device))
        bw = bw if bw is not None else pbw
        fl = fl if fl is not None else pfl
    return bw, fl


def _launch_sets(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    device: Any,
    size: int,
    hosts: dict[str, np.ndarray] | None = None,
) -> tuple[list[list[Any]], Any, int | None]:
    """The rotated input sets (see below); ``hosts``, when given, gets the first set's input
    arrays as uploaded (for its digest: steps/timed_digest.py)."""
    contract = info.contract
    assert contract is not None
    params = [(a.label, a.type) for a in info.runnable.adj.args]
    sets: list[list[Any]] = []
    dim: Any = None
    block_dim: int | None = None
    n_sets = 3
    nbytes = 0
    for k in range(n_sets):
        inputs = make_inputs(contract.inputs, size, ctx.seed + 5000 + k)
        args: list[Any] = []
        nbytes = 0
        for name, arg_type in params:
            value = inputs[name]
            if is_array(arg_type):
                host = np.ascontiguousarray(value, dtype=_numpy_dtype(arg_type))
                nbytes += host.nbytes
                if hosts is not None and k == 0 and name not in contract.outputs:
                    hosts[name] = host
                arr = wp.array(host, dtype=arg_type.dtype, device=device)
                args.append(arr)
                if dim is None and name == contract.outputs[0]:
                    dim = _dim(contract, size, inputs, arr)
                    block_dim = block_dim_of(contract, size, inputs)
            else:
                args.append(value)
        del inputs, value
        sets.append(args)
        if nbytes * n_sets > ROTATE_MAX_BYTES:
            break
    if getattr(device, "is_cuda", False) and len(sets) < n_sets:
        # Too big to make n_sets of on the host, far past any cache: upload the same data into
        # fresh device allocations instead. The time of a memory-bound kernel depends on where
        # its buffers landed (seen on an H200: one allocation in five 4-5% slower, the same
        # within 0.2% otherwise); the median over launches rotating between allocations is
        # not at the mercy of one of them.
        # Copied on the device from the set made (1 GiB: about a millisecond, where uploading it
        # again from the host took a few hundred, per copy).
        free = float(getattr(device, "free_memory", 0) or 0)
        first = sets[-1]
        while len(sets) < DEVICE_ROTATE_SETS and nbytes * (len(sets) + 1) <= min(
            DEVICE_ROTATE_MAX_BYTES, free / 2
        ):
            sets.append([_device_copy(a) if isinstance(a, wp.array) else a for a in first])
    return sets, dim, block_dim


def _pending_digest(
    info: KernelInfo, sets: list[list[Any]], hosts: dict[str, np.ndarray]
) -> PendingDigest | None:
    """For a first set too large to read back cheaply (over device_check.REVALIDATE_MAX_BYTES):
    its digest hashed from ``hosts`` while it is timed, and device copies of its inputs to compare
    the timed buffers with (steps/timed_digest.py). None: the digest is read back when shipped."""
    contract = info.contract
    assert contract is not None
    if not sets or not hosts or _array_bytes(sets[0]) <= device_check.REVALIDATE_MAX_BYTES:
        return None
    params = [(a.label, a.type) for a in info.runnable.adj.args]
    first = sets[0]
    try:
        pristine = {
            j: _device_copy(first[j])
            for j, (name, t) in enumerate(params)
            if is_array(t) and name not in contract.outputs
        }
    except Exception:  # no room on the device for the copies: read back when shipped
        return None
    scalars = {name: first[j] for j, (name, t) in enumerate(params) if not is_array(t)}
    return PendingDigest(params, hosts, scalars, pristine, contract.outputs)


def _device_copy(array: Any) -> Any:
    """A fresh allocation on the array's device holding the same data, copied there."""
    out = wp.empty(array.shape, dtype=array.dtype, device=array.device)
    TRUSTED.array_assign(out, array)
    return out


# capb (#31): a captured launch (daemon/captured/benchmark_worker.py) is timed by this same loop on its
# captured arguments, ``given`` as (launch sets, dim, block_dim); its outputs are the replay's to judge,
# so no contract check runs in or after the loop
LaunchSets = tuple[list[list[Any]], Any, int | None]


def measure(
    ctx: StepContext, info: KernelInfo, alias: str, device: Any, size: int, given: LaunchSets | None = None
) -> dict[str, Any]:
    t_sets = _clock()
    contract = info.contract
    assert contract is not None
    hosts: dict[str, np.ndarray] | None = None
    if given is None and getattr(device, "is_cuda", False) and ctx.verdict and not contract.inplace:
        hosts = {}
    sets, dim, block_dim = given if given is not None else _launch_sets(ctx, info, alias, device, size, hosts)
    pending = _pending_digest(info, sets, hosts) if hosts is not None else None
    hosts = None
    ctx.timings["bench_sets_ms"] = ctx.timings.get("bench_sets_ms", 0.0) + (_clock() - t_sets) * 1e3
    kernel = info.runnable
    opts = ctx.options
    last_progress = 0.0

    def beat(now: float) -> None:
        # Each launch may take launch_timeout_s. A progress message before every launch (50
        # round trips through the supervisor to every client) would cost more than the
        # launches of a small kernel: the heartbeat goes at most every PROGRESS_EVERY_S, and
        # its budget covers that interval too, so every launch still gets its full budget.
        nonlocal last_progress
        ctx.progress(
            stage=Step.BENCH.value,
            kernel=info.name,
            device=alias,
            size=size,
            seed=ctx.seed,
            budget_s=opts.launch_timeout_s + PROGRESS_EVERY_S,
        )
        last_progress = now

    use_events = bool(getattr(device, "is_cuda", False))
    filler: StreamFiller | None = None

    def warm_up(count: int, for_s: float) -> None:
        until = _clock() + for_s
        n = 0
        while n < count or (_clock() < until and n < WARMUP_MAX_LAUNCHES):
            launch(contract, kernel, dim=dim, inputs=sets[n % len(sets)], device=device, block_dim=block_dim)
            if use_events:
                TRUSTED.synchronize_device(device)
            n += 1
            now = _clock()
            if now - last_progress >= PROGRESS_EVERY_S:
                beat(now)
        TRUSTED.synchronize_device(device)

    def timed_launch(args: list[Any]) -> float:
        if not use_events:
            t0 = _clock()
            launch(contract, kernel, dim=dim, inputs=args, device=device, block_dim=block_dim)
            TRUSTED.synchronize_device(device)
            return _clock() - t0
        assert filler is not None
        start_ev = TRUSTED.event(device, enable_timing=True)
        end_ev = TRUSTED.event(device, enable_timing=True)
        # on the device's own stream: wp.record_event() uses the *current* device's stream,
        # which is cuda:0's unless a ScopedDevice says otherwise
        stream = device.stream
        filler.fill()  # the stream stays busy while the host enqueues (daemon/steps/stream_filler.py)
        t_enqueue = _clock()
        stream.record_event(start_ev)
        launch(contract, kernel, dim=dim, inputs=args, device=device, block_dim=block_dim, stream=stream)
        stream.record_event(end_ev)
        filler.enqueued(_clock() - t_enqueue)
        TRUSTED.synchronize_event(end_ev)
        return float(TRUSTED.get_event_elapsed_time(start_ev, end_ev)) / 1e3

    # warm-up: bench_warmup launches and, on CUDA, at least bench_warmup_s of them (each one
    # synchronised): a GPU that idled while the inputs were made runs at a low clock, and a
    # few 1 ms launches do not bring it back (measured on an H200: medians 4-5% apart
    # between runs of the same kernel with 3 warm-up launches)
    beat(_clock())
    t_warm = _clock()
    if use_events:  # after the beat: the first time, the spin kernel is compiled (~1 s)
        filler = StreamFiller(device, device.stream)
    warm_up(opts.bench_warmup, opts.bench_warmup_s if use_events else 0.0)
    _add_ms(ctx, "bench_warmup_ms", t_warm)
    # On CUDA the launches are timed in bench_windows windows bench_window_gap_s apart, and the
    # time reported is the best window's median. On an H200 the same launch on the same buffers
    # ran up to 7% slower in some windows than in others a few hundred ms away, at constant SM
    # and memory clocks with no throttle reason (benchmarks/RESULTS.md, runs 7-8): a state of the
    # device, not of the kernel, that only ever slows it down. One window of any length is at
    # its mercy (medians of 5 runs up to 6% apart); the best of 5 windows 0.2 s apart still
    # missed 2% in 2 of 6 sets of runs, the best of 15 windows 0.1 s apart held (0.16-0.97%),
    # 25 windows with no idle gap between them did not (3.46%). About 2 s per kernel and device,
    # so the windows stop early once the last bench_windows_agree of them are all within
    # bench_windows_within of the best (a device showing no slow spell: steps/bench_windows.py);
    # bench_windows = 1 is one window (the median of all launches).
    windows = max(1, opts.bench_windows) if use_events else 1
    per_window = max(1, -(-opts.bench_repeats // windows))
    # on CUDA also for at least bench_min_time_s in all: 50 launches of a 0.5 ms kernel are too
    # short (H200: medians of 5 runs 2.8% apart; with 0.2 s of launches 0.3% when no window is slow)
    per_window_s = min(opts.bench_min_time_s, opts.bench_max_time_s) / windows if use_events else 0.0
    times: list[float] = []
    by_set: list[list[float]] = [[] for _ in sets]
    window_medians: list[float] = []
    clock_gaps: list[tuple[float, float]] = []  # (host s per launch, event median) per window
    timed_s = 0.0
    i = 0
    check_gaps = given is None  # re-validate in the gaps between windows while it fits and passes
    windows_checked = 0  # gaps whose re-validation ran and passed
    reval_failed = False
    seeds = _set_seeds(ctx, sets)  # what each set's buffers hold (None: no seed describes them)
    stop: WindowStop | None = None
    t_windows = _clock()
    for w in range(windows):
        if w:
            gap_until = _clock() + opts.bench_window_gap_s
            if check_gaps:
                # CUDA: the gap re-validates the buffers just timed on fresh inputs (the next
                # window then times that other data); at the end only when it does not fit
                t_reval = _clock()
                ok = recheck(
                    ctx,
                    info,
                    alias,
                    device,
                    size,
                    sets,
                    len(times),
                    first=(w - 1) % len(sets),
                    window=w,
                    timed=(dim, block_dim),
                )
                reval_failed = ok is False
                windows_checked += ok is True
                refilled = (w - 1) % len(sets)
                small = _array_bytes(sets[refilled]) <= device_check.REVALIDATE_MAX_BYTES
                fresh = ctx.seed + REVALIDATE_SEED + 100 * w + refilled
                seeds[refilled] = fresh if ok is not None and small else None
                check_gaps = not reval_failed and _clock() - t_reval <= opts.bench_window_gap_s
                _add_ms(ctx, "bench_gap_check_ms", t_reval)
            time.sleep(max(gap_until - _clock(), 0.0))
            warm_up(opts.bench_warmup, min(WINDOW_WARMUP_S, opts.bench_warmup_s))
        window: list[float] = []
        filled_before = filler.filled_s if filler is not None else 0.0
        started = _clock()
        beat(started)
        until = started + per_window_s
        while len(window) < per_window or (_clock() < until and len(window) < MIN_TIME_MAX_LAUNCHES):
            args = sets[i % len(sets)]
            own = by_set[i % len(sets)]
            i += 1
            window.append(timed_launch(args))
            own.append(window[-1])
            now = _clock()
            if len(times) + len(window) >= 5 and timed_s + now - started > opts.bench_max_time_s:
                break
            if now - last_progress >= PROGRESS_EVERY_S:
                beat(now)
        if use_events:  # the host clock over the synchronised window against the events
            assert filler is not None
            TRUSTED.synchronize_device(device)
            host_s = _clock() - started - (filler.filled_s - filled_before)
            if clock_disagrees(host_s, window):
                clock_gaps.append((host_s / len(window), statistics.median(window)))
        timed_s += _clock() - started
        if windows > 1:  # this window's outputs, judged by the supervisor (validate.py)
            _ship_window(ctx, info, alias, sets, seeds, size, w, pending)
        times += window
        window_medians.append(statistics.median(window))
        stop = stop_after(window_medians, windows, opts.bench_windows_agree, opts.bench_windows_within)
        if stop is None and len(times) >= 5 and timed_s > opts.bench_max_time_s:
            stop = WindowStop.TIME
        if stop is not None:
            break
    _add_ms(ctx, "bench_windows_ms", t_windows)
    if windows == 1 and given is None:  # hermetic hook: the timed buffers, judged by the supervisor
        t_ship = _clock()
        ship_timed_outputs(ctx, info, alias, sets[:1] if use_events else sets, size, pending=pending)
        ctx.timings["ship_timed_ms"] = ctx.timings.get("ship_timed_ms", 0.0) + (_clock() - t_ship) * 1e3
    if pending is not None:  # its digest was hashed while the device was timed
        t_digest = _clock()
        pending.finish(PENDING_DIGEST_WAIT_S)
        _add_ms(ctx, "timed_digest_wait_ms", t_digest)
    cold: list[float] = []
    if use_events and opts.bench_cold_l2:
        t_cold = _clock()
        cold = _cold_l2_times(contract, kernel, sets, dim, device, block_dim, per_window)
        _add_ms(ctx, "bench_cold_ms", t_cold)
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
        # why they ended (steps/bench_windows.py), out of at most windows_most
        "windows_stop": (stop or WindowStop.ALL).value,
        "windows_most": windows,
        "window_spread": spread(window_medians),
        "rotated_sets": len(sets),
        # one per rotated allocation: apart, the buffers' placement moves the time; together, a
        # slow spell of the device does (on the H200 they agreed within 0.6%, runs 7-8)
        "set_medians_s": [statistics.median(t) for t in by_set if t],
        "timer": "cuda events" if use_events else "perf_counter+synchronize",
    }
    if cold:
        out["warm_median_s"] = median
        out["cold_median_s"] = statistics.median(cold)
    if clock_gaps:
        out["clock_gaps"] = clock_gaps
    if windows > 1:
        out["revalidated_windows"] = windows_checked
    if given is not None:  # capb (#31): captured launches are judged by their replay; the
        out["times_s"] = list(times)  # times themselves go to the comparison with a baseline
        return out
    for hook in TIMED_BUFFERS_HOOKS:
        hook(ctx, info, alias, sets, len(times))
    # the timed buffers, checked after the timed loop (WHD061/WHD062)
    t_reval = _clock()
    out["revalidated"] = (
        False
        if reval_failed
        else recheck(
            ctx,
            info,
            alias,
            device,
            size,
            sets,
            len(times),
            seed_check=True,
            replay=ctx.verdicts_of(info.name).validated_case.get(alias),
            timed=(dim, block_dim),
        )
    )
    ctx.timings["revalidate_ms"] = ctx.timings.get("revalidate_ms", 0.0) + (_clock() - t_reval) * 1e3
    if use_events:
        resources = kernel_resources(kernel, device, block_dim)
        if resources:
            out["resources"] = resources
    return out


def _add_ms(ctx: StepContext, key: str, since: float) -> None:
    """Adds the milliseconds since ``since`` to the step's timing ``key`` (where the time goes)."""
    ctx.timings[key] = ctx.timings.get(key, 0.0) + (_clock() - since) * 1e3


def _set_seeds(ctx: StepContext, sets: list[list[Any]]) -> list[int | None]:
    """The seed of each benchmark set's inputs as ``_launch_sets`` made them: ctx.seed + 5000 + k
    for the sets made on the host, the last of those for the device's copies of it."""
    made = 1 if _array_bytes(sets[0]) * 3 > ROTATE_MAX_BYTES else min(3, len(sets))
    return [ctx.seed + TIMED_SEED + min(k, made - 1) for k in range(len(sets))]


def _ship_window(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    sets: list[list[Any]],
    seeds: list[int | None],
    size: int,
    w: int,
    pending: PendingDigest | None = None,
) -> None:
    """At the end of window ``w`` (synchronised): the outputs of the set the next gap re-fills,
    while a seed still describes its inputs, to the supervisor. Above the host check's size only
    the first window (reading such buffers back is 1-2 s a window; the gaps check them on the
    device)."""
    k = w % len(sets)
    seed = seeds[k]
    if seed is None or (w and _array_bytes(sets[k]) > device_check.REVALIDATE_MAX_BYTES):
        return
    t_ship = _clock()
    ship_timed_outputs(
        ctx, info, alias, [sets[k]], size, seeds=[seed], window=w, pending=pending if k == 0 else None
    )
    ctx.timings["ship_timed_ms"] = ctx.timings.get("ship_timed_ms", 0.0) + (_clock() - t_ship) * 1e3


def _cold_l2_times(
    contract: Any, kernel: Any, sets: list[list[Any]], dim: Any, device: Any, block_dim: int | None, n: int
) -> list[float]:
    """CUDA: ``n`` launches each after writing COLD_L2_FLUSH_BYTES on the same stream (outside
    the events): the time with the inputs out of L2."""
    flush = wp.empty(COLD_L2_FLUSH_BYTES // 4, dtype=wp.float32, device=device)
    stream = device.stream
    out = []
    for i in range(max(n, 5)):
        flush.zero_()
        start_ev = TRUSTED.event(device, enable_timing=True)
        end_ev = TRUSTED.event(device, enable_timing=True)
        stream.record_event(start_ev)
        launch(
            contract,
            kernel,
            dim=dim,
            inputs=sets[i % len(sets)],
            device=device,
            block_dim=block_dim,
            stream=stream,
        )
        stream.record_event(end_ev)
        TRUSTED.synchronize_event(end_ev)
        out.append(float(TRUSTED.get_event_elapsed_time(start_ev, end_ev)) / 1e3)
    return out


def _array_bytes(args: list[Any]) -> int:
    return sum(n for a in args if isinstance(n := getattr(a, "capacity", None), int))


def recheck(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    device: Any,
    size: int,
    sets: list[list[Any]],
    n_launches: int,
    *,
    first: int = 0,
    window: int = 0,
    seed_check: bool = False,
    replay: Any = None,
    timed: tuple[Any, int | None] = (None, None),
) -> bool | None:
    """The check of the timed buffers (``revalidate``). On CUDA, when the set's arrays are
    larger than device_check.REVALIDATE_MAX_BYTES: every output element written at the full
    size, counted on the device (``timed``: the timed loop's dim and block_dim), then the values
    at a capped size in the first elements of the same buffers (steps/device_check.py)."""
    args = sets[first] if first < len(sets) else []
    total = _array_bytes(args)
    if not getattr(device, "is_cuda", False) or total <= device_check.REVALIDATE_MAX_BYTES:
        return revalidate(
            ctx, info, alias, device, size, sets, n_launches, first=first, window=window,
            seed_check=seed_check, replay=replay,
        )  # fmt: skip
    written = _all_written(ctx, info, alias, device, size, args, n_launches, timed)
    if written is False:
        return False
    contract = info.contract
    assert contract is not None
    capped = max(1, size * device_check.REVALIDATE_MAX_BYTES // total)
    seed = ctx.seed + REVALIDATE_SEED + 100 * window + first
    params = [(a.label, a.type) for a in info.runnable.adj.args]
    made = make_inputs(contract.inputs, capped, seed)
    shapes = [
        tuple(np.shape(made[n]))[: int(t.ndim)] if is_array(t) and n in made else None for n, t in params
    ]
    del made
    views = device_check.prefix_views(list(args), shapes)
    if views is None:  # another shape at another size: the full-size check is all there is
        return written
    view_sets = list(sets)
    view_sets[first] = views
    ctx.notes.setdefault("recheck_sizes", {})[f"{info.name}@{alias}"] = capped
    values = revalidate(
        ctx, info, alias, device, capped, view_sets, n_launches, first=first, window=window,
        seed_check=seed_check,
    )  # fmt: skip
    if values is None:
        return written
    return values


def _all_written(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    device: Any,
    size: int,
    args: list[Any],
    n_launches: int,
    timed: tuple[Any, int | None],
) -> bool | None:
    """The timed set's outputs poisoned on the device, one launch on its own inputs, the
    poison left counted on the device (WHD061 for any); None where no output can be counted."""
    contract = info.contract
    assert contract is not None
    dim, block_dim = timed
    params = [(a.label, a.type) for a in info.runnable.adj.args]
    outs = [
        (j, name, _numpy_dtype(t))
        for j, (name, t) in enumerate(params)
        if is_array(t) and name in contract.outputs and name not in contract.inplace
    ]
    outs = [(j, name, dt) for j, name, dt in outs if device_check.can_check(args[j], dt)]
    if not outs or dim is None:
        return None
    for j, _, dt in outs:
        device_check.poison(args[j], dt)
    launch(contract, info.runnable, dim=dim, inputs=args, device=device, block_dim=block_dim)
    TRUSTED.synchronize_device(device)
    for j, name, dt in outs:
        unwritten, total = device_check.unwritten_elements(args[j], dt)
        if unwritten:
            ctx.add(
                F.make_record(
                    Stage.NUMERIC,
                    F.WRONG_AFTER_TIMING,
                    Severity.ERROR,
                    ctx.display_path,
                    info.line,
                    f"kernel `{info.name}` on {alias}: after {n_launches} timed launches, launched again "
                    f"on the benchmark's own inputs (size {size}), {unwritten} of {total} elements of "
                    f"`{name}` were never written (counted on the device). The validated sizes passed: "
                    "the timed result is not the kernel's answer",
                    col=info.col,
                    end_col=info.end_col,
                    kernel=info.name,
                    expected=0,
                    actual=unwritten,
                    hint="compute every output on every launch, at every size (no guard that only covers "
                    "the validated sizes)",
                )
            )
            return False
    return True


def revalidate(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    device: Any,
    size: int,
    sets: list[list[Any]],
    n_launches: int,
    *,
    first: int = 0,
    window: int = 0,
    seed_check: bool = False,
    replay: Any = None,
) -> bool | None:
    """After the timed loop: fresh seed-derived inputs into the benchmark's own buffers (the
    ones the kernel was timed on, whatever state it left there), the outputs poisoned, one
    launch, the outputs read back before the reference runs, compared (WHD061). When the
    fresh case's outputs are the same bytes as the set's before it (another seed), with
    ``seed_check``: WHD062. ``first``: the set whose buffers are used; ``window``: which
    window's check (a seed of its own). ``replay``: the passing validation case at this size
    (validate.CaseOutcome), whose inputs and reference are used instead of fresh ones: the
    kernel never ran on them in these buffers, its answer to them was cross-checked by the
    verdict worker, and the generator and reference (most of the check's cost) do not run
    again. None: not checked."""
    contract = info.contract
    assert contract is not None
    params = [(a.label, a.type) for a in info.runnable.adj.args]
    names = [n for n, _ in params]
    pure_out = [
        j
        for j, (n, t) in enumerate(params)
        if is_array(t) and n in contract.outputs and n not in contract.inplace
    ]
    pure_in = [j for j, (n, t) in enumerate(params) if is_array(t) and n not in contract.outputs]
    # what the first set's buffers hold after the timed loop (its own inputs, seed + 5000, and
    # their result): set against the fresh case below, outputs that do not change with the seed
    chosen = sets[first : first + REVALIDATE_SETS]
    outputs_seen = (
        [b"".join(to_numpy(chosen[0][j]).tobytes() for j in pure_out)] if seed_check and chosen else []
    )
    fresh_inputs = b""
    checked = False
    for k, args in enumerate(chosen):
        replayed = replay if k == 0 and replay is not None and replay.inputs is not None else None
        if replayed is not None:
            seed, inputs = replayed.seed, replayed.inputs
        else:
            seed = ctx.seed + REVALIDATE_SEED + 100 * window + first + k
            inputs = make_inputs(contract.inputs, size, seed)
            if contract.check_constraints(inputs) is not None:
                continue
        launch_args = list(args)
        originals: dict[str, np.ndarray] = {}
        out_arrays: dict[str, Any] = {}
        fits = True
        for j, (name, arg_type) in enumerate(params):
            value = inputs.get(name)
            if not is_array(arg_type):
                launch_args[j] = value
                continue
            host = np.ascontiguousarray(value, dtype=_numpy_dtype(arg_type))
            poisoned = name in contract.outputs and name not in contract.inplace
            src = poison_like(host) if poisoned else host
            if not poisoned:
                originals[name] = host  # only read: copied into the buffer, converted for the reference
            if name in contract.outputs:
                out_arrays[name] = args[j]
            if not _write_into(args[j], src, arg_type, device):
                fits = False
                break
        if not fits:
            continue
        dim = _dim(contract, size, inputs, out_arrays[contract.outputs[0]])
        launch(
            contract,
            info.runnable,
            dim=dim,
            inputs=launch_args,
            device=device,
            block_dim=block_dim_of(contract, size, inputs),
        )
        TRUSTED.synchronize_device(device)
        snaps = {name: snapshot_bytes(out_arrays[name]) for name in contract.outputs}
        if replayed is not None:
            refs = replayed.refs
        else:
            refs = reference_outputs(contract, names, originals, inputs)
        tol = contract.tolerance_for(alias)
        checked = True
        if k == 0 and seed_check:
            outputs_seen.append(b"".join(snaps[params[j][0]][0] for j in pure_out))
            fresh_inputs = b"".join(originals[params[j][0]].tobytes() for j in pure_in)
        for name in contract.outputs:
            got = from_snapshot(snaps[name])
            poisoned = name not in contract.inplace
            if within(got, refs[name], tol, poisoned):
                continue
            report = compare(
                name, from_snapshot(snaps[name]), refs[name], tol, poisoned=name not in contract.inplace
            )
            if not report.ok:
                _wrong_after_timing(ctx, info, alias, size, seed, n_launches, report)
                return False
    if not checked:
        return None
    # the fresh case passed: its output is the reference's; the same bytes as the first set's
    # output for other inputs means the answer does not depend on the seed
    n_elements = sum(int(np.prod(chosen[0][j].shape)) for j in pure_out)
    if len(outputs_seen) == 2 and n_elements > 1 and outputs_seen[0] == outputs_seen[1]:
        # rare: only now regenerate the set's own inputs (seed + 5000, as _launch_sets made them)
        set_inputs = make_inputs(contract.inputs, size, ctx.seed + 5000 + first)
        same_inputs = fresh_inputs == b"".join(
            np.ascontiguousarray(set_inputs[params[j][0]], dtype=_numpy_dtype(params[j][1])).tobytes()
            for j in pure_in
        )
        ctx.add(
            F.make_record(
                Stage.NUMERIC,
                F.SEED_INDEPENDENT,
                Severity.WARNING,
                ctx.display_path,
                info.line,
                f"kernel `{info.name}` on {alias}, size {size}: the outputs (and the reference) are the "
                "same bytes for two different seeds"
                + (
                    ": the contract's generator gives the same inputs every time"
                    if same_inputs
                    else ", though the inputs differ"
                )
                + "; a kernel that ignores its inputs would pass this validation",
                col=info.col,
                end_col=info.end_col,
                kernel=info.name,
                hint="draw the inputs from the generator's `rng`, so each seed has another answer",
            )
        )
    return True


def _write_into(arr: Any, src: np.ndarray, arg_type: Any, device: Any) -> bool:
    """Write ``src`` into the existing buffer ``arr`` (False: another shape). On the CPU through
    the array's memory itself (no allocation), on a GPU through a fresh upload and a copy."""
    if not getattr(device, "is_cuda", False):
        view = to_numpy(arr)
        if view.shape != src.shape or not view.flags.c_contiguous:
            return False
        np.copyto(view, src)
        return True
    fresh = wp.array(src, dtype=arg_type.dtype, device=device)
    if fresh.shape != arr.shape:
        return False
    TRUSTED.array_assign(arr, fresh)
    return True


def _wrong_after_timing(
    ctx: StepContext, info: KernelInfo, alias: str, size: int, seed: int, n_launches: int, r: OutputReport
) -> None:
    idx = r.first_bad[0] if r.first_bad is not None and len(r.first_bad) == 1 else r.first_bad
    what = (
        f"{r.n_unwritten} of {r.n_total} elements of `{r.name}` were never written"
        if r.n_unwritten
        else f"{r.n_bad} of {r.n_total} elements of `{r.name}` are wrong (got {r.got}, expected {r.expected})"
    )
    ctx.add(
        F.make_record(
            Stage.NUMERIC,
            F.WRONG_AFTER_TIMING,
            Severity.ERROR,
            ctx.display_path,
            info.line,
            f"kernel `{info.name}` on {alias}: after {n_launches} timed launches, on fresh inputs in the "
            f"benchmark's buffers (size {size}, seed {seed}), {what}; first bad index {idx}. "
            "The validated sizes passed: the timed result is not the kernel's answer",
            col=info.col,
            end_col=info.end_col,
            kernel=info.name,
            expected=r.expected,
            actual=r.got,
            hint="compute every output on every launch, at every size (no guard that only covers the "
            "validated sizes, no state kept between launches, no result served from an earlier call)",
        )
    )


def _clock_disagreement(
    ctx: StepContext, info: KernelInfo, alias: str, gaps: list[tuple[float, float]], windows: int
) -> None:
    """WHD063: in some timed windows the host clock saw far more time per launch than the
    events (integrity.clock_disagrees): work off the timed stream, or a patched event clock."""
    host, event = max(gaps, key=lambda g: g[0] / max(g[1], 1e-12))
    ctx.add(
        F.make_record(
            Stage.PERFORMANCE,
            F.CLOCK_DISAGREES,
            Severity.WARNING,
            ctx.display_path,
            info.line,
            f"kernel `{info.name}` on {alias}: in {len(gaps)} of {windows} timed windows the host clock "
            f"saw {host * 1e6:.1f} µs per launch after a device synchronise, the events "
            f"{event * 1e6:.1f} µs (median): the events did not time all of the work",
            col=info.col,
            end_col=info.end_col,
            kernel=info.name,
            expected=event,
            actual=host,
            hint="launch all of the kernel's work on the stream it is given; do not create streams "
            "or start work from the kernel's module",
        )
    )


def kernel_resources(kernel: Any, device: Any, block_dim: int | None) -> dict[str, int]:
    """Registers and local memory per thread of the compiled CUDA kernel ({} when unknown)."""
    names = {"register_count": "registers", "local_memory_size": "local_bytes"}
    try:
        props = wp.get_cuda_kernel_properties(kernel, device, block_dim)
        return {ours: int(props[theirs]) for theirs, ours in names.items() if props.get(theirs) is not None}
    except Exception:
        return {}


def bench_kernel(ctx: StepContext, info: KernelInfo, alias: str, device: Any) -> None:
    contract = info.contract
    assert contract is not None
    size = contract.benchmark_size_for(alias)
    carved = persisting_l2_bytes(device, reset=True)
    if carved:
        ctx.add(
            F.make_record(
                Stage.PERFORMANCE,
                F.PERSISTING_L2,
                Severity.WARNING,
                ctx.display_path,
                info.line,
                f"{alias}: the workspace set aside {carved} bytes of persisting L2 cache; it was set "
                "back to the context's own limit before timing `" + info.name + "`",
                kernel=info.name,
                hint="do not change the device's cache limits from the kernel's module",
            )
        )
    try:
        m = measure(ctx, info, alias, device, size)
    except MemoryError:
        ctx.add(memory_record(ctx, info, alias, "benchmark"))
        return
    except ContractProblem as exc:
        line, col, end_col = contract_at(ctx, info)
        ctx.add(
            F.make_record(
                Stage.PERFORMANCE,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                ctx.display_path,
                line,
                f"benchmark of `{info.name}`: {exc}",
                col=col,
                end_col=end_col,
                kernel=info.name,
            )
        )
        return
    except Exception as exc:
        end_if_context_lost(exc)  # a GPU fault while timing: the worker ends (steps/launching.py)
        raise
    if m.get("clock_gaps"):
        _clock_disagreement(ctx, info, alias, m["clock_gaps"], len(m["window_medians_s"]))
    median = m["median_s"]
    metrics: dict[str, float] = {"latency_us": median * 1e6, "time_ms": median * 1e3}
    peak_bw, peak_fl = peaks(ctx, alias, device)
    m["peaks"] = {
        "bandwidth_gbs": peak_bw,
        "gflops": peak_fl,
        "profile": ctx.options.profile or profile_name(device),
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
    ctx.set_bench(info.name, alias, m)
    windowed = (
        f"best of {m['windows']} windows ({describe(m, ctx.options.bench_windows_within)}); "
        f"all launches: median {m['pooled_median_s'] * 1e6:.1f}, "
        if m["windows"] > 1
        else ""
    )
    parts = [
        f"median {metrics['latency_us']:.1f} µs ({windowed}min {m['min_s'] * 1e6:.1f}, "
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
    ctx.add(
        F.make_record(
            Stage.PERFORMANCE,
            F.MEASURED,
            Severity.INFO,
            ctx.display_path,
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
            ctx.add(
                F.make_record(
                    Stage.PERFORMANCE,
                    F.IMPLAUSIBLE,
                    Severity.WARNING,
                    ctx.display_path,
                    info.line,
                    f"kernel `{info.name}` on {alias}: {util} = {metrics[util]:.2f} "
                    "is beyond the hardware peak",
                    kernel=info.name,
                    hint="check the contract's bytes/flops functions and that the kernel does all its work",
                )
            )
    severity = Severity(ctx.options.perf_severity)
    m["targets"] = [
        {
            "target": str(target),
            "value": metrics.get(target.metric),
            "verdict": check_target(ctx, info, alias, target, metrics, severity),
        }
        for target in contract.parsed_targets()
    ]


def check_target(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    target: Target,
    metrics: dict[str, float],
    severity: Severity,
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
        ctx.add(
            F.make_record(
                Stage.PERFORMANCE,
                F.TARGET_UNCHECKED,
                Severity.WARNING,
                ctx.display_path,
                info.line,
                f"kernel `{info.name}` on {alias}: target `{target}` not checked: {why}",
                kernel=info.name,
            )
        )
        return "unchecked"
    if target.holds(value):
        return "met"
    ctx.add(
        F.make_record(
            Stage.PERFORMANCE,
            F.TARGET_MISSED,
            severity,
            ctx.display_path,
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


def run(
    ctx: StepContext, kernels: Mapping[str, KernelInfo], devices: Sequence[tuple[str, Any]]
) -> StepOutcome:
    """Every kernel that passed validation on a device timed there: its ``bench`` figures per device,
    the targets checked, the timed buffers checked again."""
    t0 = _clock()
    for info in kernels.values():
        if info.contract is None or info.name in ctx.skip:
            continue
        for alias, device in devices:
            if ctx.verdicts_of(info.name).validate.get(alias) == "pass":
                bench_kernel(ctx, info, alias, device)
    ctx.timings["bench_ms"] = (_clock() - t0) * 1e3
    return ctx.outcome()
