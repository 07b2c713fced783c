"""The daemon's ``accept`` request (daemon/requests.py ``cmd_accept``): the work, off the event loop."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_harness.daemon import findings as F
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import accept_module

if TYPE_CHECKING:
    from warp_harness.daemon.engine import Engine

# what an accept reports of its replay: why a launch kept its old baseline
_PROBLEMS = (F.REPLAY_BOUNDS, F.REPLAY_FAILED, F.CAPTURE_REFUSED)


def accept_in_daemon(engine: Engine, path: Path, kernel: str | None) -> dict[str, Any]:
    """Accept ``path``'s captured launches (of ``kernel``) on the daemon's own worker (a fresh one
    when the daemon's jobs run elsewhere); the reply's fields."""
    from warp_harness.daemon.supervisor import Supervisor

    display = engine.display(path)
    kernels = {kernel} if kernel else None
    if isinstance(engine.supervisor, Supervisor):
        accepted, outcome = accept_module(
            engine.workspace,
            path,
            display,
            engine.options,
            supervisor_call(engine.supervisor),
            kernels=kernels,
        )
    else:
        with Supervisor(engine.workspace, engine.options, warmup=False) as sup:
            accepted, outcome = accept_module(
                engine.workspace, path, display, engine.options, supervisor_call(sup), kernels=kernels
            )
    return {
        "path": display,
        "kernel": kernel,
        "accepted": accepted,
        "launches": outcome.accepted,
        "records": [r.to_dict() for r in outcome.records if r.rule in _PROBLEMS],
    }
