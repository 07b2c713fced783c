"""Where the engine (daemon/engine.py) and ``ci`` call the replay: through the supervisor's worker."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def replay_for_engine(engine: Engine, path: Path, display: str) -> list[Record]:
    """The replay records of one saved file; [] when untrusted, off, remote, or nothing is captured."""
    from warp_harness.daemon.supervisor import Supervisor

    mode = getattr(engine, "replay_captures", "changed")
    if not engine.trusted or mode == "off" or not isinstance(engine.supervisor, Supervisor):
        return []
    if not (engine.workspace / ".warp-harness" / "captures" / "kernels").is_dir():
        return []  # the cached-save path pays one stat
    outcome = replay_module(
        engine.workspace,
        path,
        display,
        engine.options,
        supervisor_call(engine.supervisor),
        only_changed=mode == "changed",
    )
    records: list[Record] = outcome.records
    return records
