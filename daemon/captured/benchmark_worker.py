"""The worker's half of timing captured launches (a ``replay`` job with ``benchmark`` set).

Runs in the sandboxed worker, as the replay does (``worker_side``): each kernel is built as the
replay builds it (``worker_side.saved_kernels``: from its text alone where it can be, else from the
module's definitions), each launch's arguments are read from the ``.npy`` files the supervisor wrote,
and the launch is timed by the benchmark step's own loop (``steps/bench.measure``: warm-up
launches excluded, every launch synchronised, CPU ``perf_counter`` / CUDA events with the stream
kept busy, windows on CUDA, input sets rotated) at the captured size, on the release build of the
kernel. It judges nothing: the launch times go back to the supervisor, which compares them with
the baseline in the user's private cache (``benchmark``).
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


def run_benchmark_job(msg: dict[str, Any], progress: Any, job: Any, guard: Any) -> dict[str, Any]:
    """Launch times of ``msg``'s captured launches: ``{"launches": {id: {"runs": [[s, ...], ...],
    "device": alias, "device_name": ...}}}``; ``runs`` timed runs of each (a baseline takes two)."""
    from warp_harness.daemon.captured.worker_side import (
        launch_device,
        launch_values,
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
            built: set[str] = set()
            for launch in entry["launches"]:
                lid = str(launch["id"])
                device = launch_device(wp, launch)
                dev = wp.get_device(device)
                try:
                    if device not in built:
                        progress(stage="compile", kernel=name, device=device, budget_s=job.options.timeout_s)
                        load_for(wp, kernel, device, launch.get("block_dim"))
                        built.add(device)
                    sets = [launch_values(wp, kernel, launch, folder, device)]
                    while len(sets) < ROTATE_SETS and _nbytes(sets[0]) * (len(sets) + 1) <= ROTATE_MAX_BYTES:
                        sets.append(launch_values(wp, kernel, launch, folder, device))
                    given = (sets, tuple(int(x) for x in launch["dim"]), launch.get("block_dim"))
                    runs = [
                        bench.measure(job, info, device, dev, 0, given)["times_s"]
                        for _ in range(max(1, int(entry.get("runs") or 1)))
                    ]
                except Exception as exc:
                    launches[lid] = {"kernel": name, "error": f"{type(exc).__name__}: {exc}"}
                    continue
                launches[lid] = {
                    "kernel": name,
                    "runs": runs,
                    "device": device,
                    "device_name": str(dev.name),
                    "host": host,
                }
        return {"status": "ok", "launches": launches, "notes": saved.notes}
    finally:
        guard().restore()
