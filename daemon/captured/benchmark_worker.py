"""The worker's half of timing captured launches (a ``replay`` job with ``benchmark`` set).

Runs in the sandboxed worker, as the replay does (``worker_side``): each kernel is built as the
replay builds it (``worker_side.saved_kernels``: from its text alone where it can be, else from the
module's definitions), each launch's arguments are read from the ``.npy`` files the supervisor wrote,
and the launch is timed by the benchmark step's own loop (``steps/bench.measure``: warm-up
launches excluded, every launch synchronised, CPU ``perf_counter`` / CUDA events with the stream
kept busy, windows on CUDA, input sets rotated) at the captured size, on the release build of the
kernel. It judges nothing: the launch times go back to the supervisor, which compares them with
the baseline in the user's private cache (``benchmark``).

A kernel whose source changed is timed against its accepted source in the same job: an entry with
``baseline`` (the accepted module text, as the supervisor kept it in the user's private cache) and
``pairs`` gets both built, and each launch timed ``pairs`` times as an interleaved pair (accepted,
current; then current, accepted; ...), so a load that comes and goes on the machine falls on both.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from warp_harness.contract import Contract
from warp_harness.daemon.captured.benchmark_baselines import host_key

ROTATE_MAX_BYTES = 256 << 20  # copies of the captured arguments rotated between launches, as bench.py
ROTATE_SETS = 3


def _no_reference(**_: Any) -> dict[str, Any]:
    return {}


def _no_inputs(_size: int, _rng: Any) -> dict[str, Any]:
    return {}


def _launch_contract(name: str, params: list[Any]) -> Contract:
    """What ``steps/launching.launch`` reads of a contract (a plain ``wp.launch``: the recorder
    stores ``wp.launch_tiled``'s launches as the plain launch it forwards to); never validated."""
    return Contract(kernel=name, reference=_no_reference, inputs=_no_inputs, outputs=[params[0].label])


def _nbytes(values: list[Any]) -> int:
    return sum(n for v in values if isinstance(n := getattr(v, "capacity", None), int))


def _launch_sets(wp: Any, kernel: Any, launch: dict[str, Any], folder: Path, device: str) -> Any:
    """The launch's argument sets for ``kernel`` (copies rotated between launches), dim, block_dim."""
    from warp_harness.daemon.captured.worker_side import launch_values

    sets = [launch_values(wp, kernel, launch, folder, device)]
    while len(sets) < ROTATE_SETS and _nbytes(sets[0]) * (len(sets) + 1) <= ROTATE_MAX_BYTES:
        sets.append(launch_values(wp, kernel, launch, folder, device))
    return sets, tuple(int(x) for x in launch["dim"]), launch.get("block_dim")


def _accepted_kernel(entry: dict[str, Any], msg: dict[str, Any], job: Any) -> Any:
    """The kernel of ``entry``'s accepted module text, built as its current text is (hermetically
    where the supervisor said so, else from the text's definitions); None when there is none."""
    from warp_harness.daemon.captured.worker_side import build_module, hermetic_kernel

    baseline = entry.get("baseline")
    if not isinstance(baseline, dict) or not isinstance(baseline.get("source"), str):
        return None
    text, name = str(baseline["source"]), str(entry["name"])
    if baseline.get("hermetic"):
        return hermetic_kernel(text, job.path, name, msg.get("workspace"), baseline, entry)
    return getattr(build_module(job.path, text), name, None)


def run_benchmark_job(msg: dict[str, Any], progress: Any, job: Any, guard: Any) -> dict[str, Any]:
    """Launch times of ``msg``'s captured launches: ``{"launches": {id: {"runs": [[s, ...], ...],
    "device": alias, "device_name": ...}}}``; ``runs`` timed runs of each (a baseline takes two).
    An entry with ``baseline`` and ``pairs``: ``"pairs": [[accepted times, current times], ...]``
    instead of ``runs`` (``"baseline_error"`` when the accepted text did not build)."""
    from warp_harness.daemon.captured.worker_side import (
        launch_device,
        load_for,
        saved_kernels,
    )
    from warp_harness.daemon.steps import KernelInfo, bench

    wp: Any = importlib.import_module("warp")
    folder = Path(str(msg["folder"]))
    host = host_key()  # where the times were measured: a Ray node's timings are that node's
    launches: dict[str, Any] = {}
    try:
        saved = saved_kernels(msg, job, progress)
        if saved.error is not None:
            return {"status": "import-error", "error": saved.error, "launches": {}}
        for entry in msg.get("kernels") or []:
            name = str(entry["name"])
            kernel = saved.kernels.get(name)
            if kernel is None:
                continue
            info = KernelInfo(
                name=name, line=1, col=0, end_col=0, kernel=kernel, runnable=kernel,
                contract=_launch_contract(name, list(kernel.adj.args)),
            )  # fmt: skip
            pairs = max(0, int(entry.get("pairs") or 0))
            accepted: KernelInfo | None = None
            baseline_error: str | None = None
            if pairs:
                try:
                    old = _accepted_kernel(entry, msg, job)
                except Exception as exc:
                    old, baseline_error = None, f"{type(exc).__name__}: {exc}"[:400]
                if old is not None and isinstance(old, wp.Kernel):
                    accepted = KernelInfo(
                        name=name, line=1, col=0, end_col=0, kernel=old, runnable=old,
                        contract=_launch_contract(name, list(old.adj.args)),
                    )  # fmt: skip
            built: set[tuple[str, int]] = set()
            for launch in entry["launches"]:
                lid = str(launch["id"])
                device = launch_device(wp, launch)
                dev = wp.get_device(device)

                done: dict[str, Any] = {"kernel": name, "device": device, "device_name": str(dev.name)}
                try:
                    sides = [info] if accepted is None else [accepted, info]
                    for which in sides:
                        if (device, id(which)) not in built:
                            progress(
                                stage="compile", kernel=name, device=device, budget_s=job.options.timeout_s
                            )
                            load_for(wp, which.kernel, device, launch.get("block_dim"))
                            built.add((device, id(which)))
                    given = [_launch_sets(wp, which.kernel, launch, folder, device) for which in sides]
                    if accepted is not None:
                        measured: list[list[Any]] = []
                        for k in range(pairs):  # the order alternates: a trend falls on both
                            order = (0, 1) if k % 2 == 0 else (1, 0)
                            times = {
                                i: bench.measure(job, sides[i], device, dev, 0, given[i])["times_s"]
                                for i in order
                            }
                            measured.append([times[0], times[1]])
                        done["pairs"] = measured
                    else:
                        runs = max(1, int(entry.get("runs") or 1))
                        done["runs"] = [
                            bench.measure(job, info, device, dev, 0, given[0])["times_s"] for _ in range(runs)
                        ]
                        if baseline_error is not None:
                            done["baseline_error"] = baseline_error
                except Exception as exc:
                    launches[lid] = {"kernel": name, "error": f"{type(exc).__name__}: {exc}"}
                    continue
                launches[lid] = {**done, "host": host}
        return {"status": "ok", "launches": launches, "notes": saved.notes}
    finally:
        guard().restore()
