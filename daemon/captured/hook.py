"""Where the engine (daemon/engine.py) and ``ci`` call the replay: through the supervisor's worker."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_harness.daemon import findings as F
from warp_harness.daemon import repros
from warp_harness.daemon.captured.replay import Call, replay_module
from warp_harness.record import Record

if TYPE_CHECKING:
    from warp_harness.daemon.engine import Engine
    from warp_harness.daemon.supervisor import Supervisor

# what a save replays: the captured launches of kernels whose source changed ("changed"), all of a
# file's captured launches ("all", ci), or none ("off")
MODES = ("changed", "all", "off")


def supervisor_call(sup: Supervisor) -> Call:
    """One replay job on the supervisor's worker (restarted when it died, as for any job)."""

    def call(msg: dict[str, Any]) -> Any:
        with sup._lock:
            return sup._call(msg, None)

    return call


def executor_call(executor: Any) -> Call | None:
    """Where ``executor`` runs a replay job: the local supervisor's worker, or the Ray executor's
    cluster (``RayExecutor.replay_call``); None where it runs none."""
    from warp_harness.daemon.supervisor import Supervisor

    if isinstance(executor, Supervisor):
        return supervisor_call(executor)
    call: Call | None = getattr(executor, "replay_call", None)
    return call


def replay_for_engine(engine: Engine, path: Path, display: str) -> tuple[list[Record], list[str]]:
    """The replay records of one saved file and the failing cases stored for them (files relative to
    the workspace); nothing when untrusted, off, remote, or nothing is captured."""

    mode = getattr(engine, "replay_captures", "changed")
    call = executor_call(engine.supervisor)
    if not engine.trusted or mode == "off" or call is None:
        return [], []
    if not (engine.workspace / ".warp-harness" / "captures" / "kernels").is_dir():
        return [], []  # the cached-save path pays one stat
    outcome = replay_module(
        engine.workspace,
        path,
        display,
        engine.options,
        call,
        only_changed=mode == "changed",
        shrink_failures=engine.options.shrink,
        cache=mode == "changed",  # a save: an unchanged replay's result comes from the user's cache
    )
    records: list[Record] = outcome.records
    # capb (#31 item 4): the captured launches timed against their baselines (daemon/captured/benchmark.py)
    if engine.options.bench and getattr(engine, "benchmark_captures", True):
        from warp_harness.daemon.captured.benchmark import benchmark_module

        timed = benchmark_module(
            engine.workspace, path, display, engine.options, call, replayed=outcome, every=mode == "all",
        )  # fmt: skip
        said = {r.location.kernel for r in records if r.rule == F.NOT_HERMETIC}  # WHD069 once a kernel
        records = [
            *records,
            *(r for r in timed.records if r.rule != F.NOT_HERMETIC or r.location.kernel not in said),
        ]
    stored: list[str] = []
    for failure in outcome.failures:
        try:
            file = repros.store(engine.workspace, path, failure, engine.options.compile_options())
        except (repros.OutsideWorkspaceError, OSError):
            continue
        stored.append(file.relative_to(engine.workspace).as_posix())
    return records, stored


def replay_case(executor: Any, case: dict[str, Any]) -> tuple[str, list[Record]]:
    """`warp-harness replay` of a stored failing replay: its captured launch again, judged again
    (pass | fail | error, records)."""
    call = executor_call(executor)  # locally, or on the Ray cluster with `--executor ray`
    if call is None:
        return "error", []
    lid = str(case.get("edge_case") or "").rsplit(" ", 1)[-1]  # "captured launch <id>"
    path = executor.workspace / str(case["path"])
    size, original = case.get("size"), case.get("original_size")
    dims = None
    if isinstance(size, int) and isinstance(original, int) and 0 < size < original:
        dims = {lid: [size, *_other_dims(executor.workspace, str(case["path"]), str(case["kernel"]), lid)]}
    outcome = replay_module(
        executor.workspace,
        path,
        str(case["path"]),
        executor.options,
        call,
        only_changed=False,
        kernels={str(case["kernel"])},
        launches={lid},
        dims=dims,
    )
    if not outcome.launches:
        return "error", outcome.records
    failing = [r for r in outcome.records if r.severity.value != "info"]
    return ("fail" if failing else "pass"), outcome.records


def _other_dims(workspace: Path, rel: str, kernel: str, lid: str) -> list[int]:
    """The captured launch's dims after the first (a shrunk case keeps them)."""
    from warp_harness.capture.store import CaptureStore, KernelIndex

    for entry in CaptureStore(workspace).for_module(rel):
        if isinstance(entry, KernelIndex) and entry.name == kernel:
            for launch in entry.launches:
                if launch["id"] == lid:
                    return [int(x) for x in launch["dim"][1:]]
    return []
