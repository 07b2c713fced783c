"""The worker's half of timing captured launches (a ``replay`` job with ``benchmark`` set).

Runs in the sandboxed worker, as the replay does (``worker_side``): the saved module is built from
its definitions only, each launch's arguments are read from the ``.npy`` files the supervisor wrote,
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


def _arguments(
    wp: Any, params: list[Any], args: list[dict[str, Any]], folder: Path, device: str
) -> list[Any]:
    """A fresh set of the launch's arguments (arrays read again: each set has its own memory)."""
    from warp_harness.daemon.captured.worker_side import _value

    return [_value(wp, p.type, d, folder, device) for p, d in zip(params, args, strict=True)]


def run_benchmark_job(msg: dict[str, Any], progress: Any, job: Any, guard: Any) -> dict[str, Any]:
    """Launch times of ``msg``'s captured launches: ``{"launches": {id: {"runs": [[s, ...], ...],
    "device": alias, "device_name": ...}}}``; ``runs`` timed runs of each (a baseline takes two)."""
    from warp_harness.daemon.captured.worker_side import build_module
    from warp_harness.daemon.steps import KernelInfo, bench

    wp: Any = importlib.import_module("warp")
    folder = Path(str(msg["folder"]))
    host = host_key()  # where the times were measured: a Ray node's timings are that node's
    launches: dict[str, Any] = {}
    notes: list[str] = []
    try:
        progress(stage="import", budget_s=job.options.timeout_s)
        try:
            module = build_module(job.path)
        except BaseException as exc:
            return {"status": "import-error", "error": f"{type(exc).__name__}: {exc}", "launches": {}}
        for entry in msg.get("kernels") or []:
            name = str(entry["name"])
            kernel = getattr(module, name, None)
            if kernel is None or not isinstance(kernel, wp.Kernel):
                notes.append(f"kernel `{name}` is not a module-level kernel of the saved file")
                continue
            params = list(kernel.adj.args)
            info = KernelInfo(
                name=name, line=1, col=0, end_col=0, kernel=kernel, runnable=kernel,
                contract=_launch_contract(name, params),
            )  # fmt: skip
            built: set[str] = set()
            for launch in entry["launches"]:
                lid = str(launch["id"])
                device = (
                    launch["device"] if wp.is_device_available(wp.get_device(launch["device"])) else "cpu"
                )
                dev = wp.get_device(device)
                try:
                    if device not in built:
                        progress(stage="compile", kernel=name, device=device, budget_s=job.options.timeout_s)
                        resolve = importlib.import_module("warp._src.context")._resolve_launch_block_dim
                        kernel.module.load(dev, resolve(dev, launch.get("block_dim")))
                        built.add(device)
                    sets = [_arguments(wp, params, launch["args"], folder, device)]
                    while len(sets) < ROTATE_SETS and _nbytes(sets[0]) * (len(sets) + 1) <= ROTATE_MAX_BYTES:
                        sets.append(_arguments(wp, params, launch["args"], folder, device))
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
        return {"status": "ok", "launches": launches, "notes": notes}
    finally:
        guard().restore()
