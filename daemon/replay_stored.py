"""``warp-harness replay``: the stored failing cases of the failure library (daemon/repros.py) run
again through an executor; a stored captured launch goes back through its replay
(daemon/captured/hook.py), which stores new failing cases with ``repros`` itself.

Apart from ``repros`` so the library (reading and writing cases) stays below the executors and the
captured-launch replay that use it.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from typing import Any

from warp_harness.daemon.captured.hook import replay_case
from warp_harness.daemon.executor import Executor, slots
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.repros import StoredCase
from warp_harness.record import Record


def replay(
    executor: Executor,
    cases: Sequence[StoredCase],
    *,
    parallel: int | None = None,
    on_start: Callable[[int, StoredCase], None] | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> list[tuple[str, list[Record]]]:
    """``executor.run_case`` on every case, ``parallel`` at once (default: as many as the
    executor runs at once, ``executor.slots``: 1 for a local worker, the cluster's slots with
    Ray); the (status, records) in the cases' order, whichever finished first. ``on_start``
    (number from 1, case) is called as each case is handed to the executor, one call at a time."""
    width = min(len(cases), parallel if parallel is not None else slots(executor, (Step.VALIDATE,)))
    lock = threading.Lock()

    def one(numbered: tuple[int, StoredCase]) -> tuple[str, list[Record]]:
        number, stored = numbered
        if on_start is not None:
            with lock:
                on_start(number, stored)
        if stored.case.get("kind") == "captured":  # a captured launch's replay: daemon/captured/
            return replay_case(executor, stored.case)
        return executor.run_case(stored.case, on_progress=on_progress)

    numbered = list(enumerate(cases, start=1))
    if width <= 1:
        return [one(n) for n in numbered]
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=width, thread_name_prefix="warp-harness-replay"
    ) as pool:
        return list(pool.map(one, numbered))
