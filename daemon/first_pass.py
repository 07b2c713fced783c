"""The daemon's first pass: every kernel module of the workspace checked once when it starts, so
`warp-harness results` lists them before anything is saved.

What a job does is what a save's does (``Engine.check``): the static tier only in an untrusted
workspace; both tiers when trusted, answered from the result cache when the module, its
dependencies and the options are unchanged since the last run. It runs at low priority: one job at
a time, and only while no other job waits, so a save (or a client's ``check``) queues behind at
most the one module the pass is on. A module already checked (saved while the pass ran) is skipped.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from warp_harness.daemon import cache as result_cache
from warp_harness.daemon import discovery

if TYPE_CHECKING:
    from warp_harness.daemon.server import Daemon


async def _others_done(daemon: Daemon) -> None:
    """Wait until no job is queued or running."""
    while True:
        waiting = [f for f in daemon._pending.values() if not f.done()]
        if not waiting:
            return
        await asyncio.wait(waiting)


async def run_first_pass(daemon: Daemon) -> int:
    """Check every kernel module of ``daemon``'s workspace once; the number of jobs it ran."""
    t0 = time.perf_counter()
    modules: list[Path] = await asyncio.to_thread(
        discovery.workspace_modules, daemon.workspace, daemon.engine.overrides
    )
    modules = [m for m in modules if result_cache.inside(m, daemon.workspace)]  # no link out of it
    ran = cached = 0
    for module in modules:
        await _others_done(daemon)
        if daemon.engine.display(module) in daemon.results or not module.is_file():
            continue
        report = await daemon.enqueue(module)
        ran += 1
        cached += bool(report.cached)
    daemon.log(
        f"warp-harness daemon: first pass: {ran} kernel module(s) checked in "
        f"{time.perf_counter() - t0:.1f} s ({cached} from the result cache)"
    )
    return ran
