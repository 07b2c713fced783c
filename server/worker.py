"""The analysis thread: one worker thread owns the analyser and the workspace model.

The event loop keeps answering requests while a document is analysed (a 59,000-kernel file takes
a minute): it snapshots what to analyse, hands it here, and applies the result when it is done.
``IncrementalAnalyser`` and ``ProjectIndex`` are not thread-safe, so every call that touches them
(analyses, forgets, file events) goes through this one thread, in the order it was handed over.

Per key (a document's or notebook's URI) only the newest job counts: a job superseded before it
starts is skipped, and a result superseded while it ran is not applied (the newer job's is).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger("warp_harness.server.worker")

T = TypeVar("T")

# how long a request (hover, code actions, pull diagnostics) waits for the analysis of the text as it is
# now before answering from the last completed one
REQUEST_BUDGET_S = 1.0


class Superseded(Exception):
    """A newer job for the same key was handed over before this one started."""


class Job:
    """One keyed analysis: what it was made from (``stamp``), and a future of the event loop that is done
    once its result was applied, or dropped (superseded, stale or failed): True when it was applied."""

    def __init__(self, key: str, stamp: Any, generation: int, future: asyncio.Future[bool]) -> None:
        self.key = key
        self.stamp = stamp
        self.generation = generation
        self.future = future


@dataclass(eq=False, repr=False)
class Snapshot:
    """One document as it is now, ready for the analysis thread: what it is made of (``stamp``: a job of
    the same stamp is the same analysis), whether the last analysis is of it already, the work, how its
    result is applied on the event loop, and what a new job starts besides (``started``)."""

    stamp: Any
    analysed: bool
    work: Callable[[], Any]
    apply: Callable[[Any], None]
    started: Callable[[Job], None] | None = None


_Item = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


class AnalysisWorker:
    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._generation: dict[str, int] = {}
        self.jobs: dict[str, Job] = {}  # per key, the newest job handed over

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            work, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(work())
            except BaseException as exc:  # handed to the event loop with the future
                future.set_exception(exc)

    def call_soon(self, work: Callable[[], T]) -> concurrent.futures.Future[T]:
        """``work()`` on the analysis thread, after everything handed over before it."""
        if self._thread is None:
            # a daemon thread: a minute-long analysis never holds up the server's exit
            self._thread = threading.Thread(target=self._run, name="warp-harness analysis", daemon=True)
            self._thread.start()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._queue.put((work, future))
        return future

    def call(self, loop: asyncio.AbstractEventLoop, work: Callable[[], T]) -> asyncio.Future[T]:
        """:meth:`call_soon` as a future of ``loop``."""
        return asyncio.wrap_future(self.call_soon(work), loop=loop)

    def submit(
        self,
        loop: asyncio.AbstractEventLoop,
        key: str,
        stamp: Any,
        work: Callable[[], T],
        apply: Callable[[T], None],
        reuse: bool = True,
    ) -> Job:
        """``work()`` on the analysis thread, then ``apply(result)`` on the event loop unless a newer
        job for ``key`` was submitted meanwhile. With ``reuse``, a job with the same ``stamp`` as the
        newest one for ``key`` is that one (running, or done: applied, or failed, not to be retried)."""
        current = self.jobs.get(key)
        if reuse and current is not None and current.stamp == stamp and not current.future.cancelled():
            return current
        generation = self._generation[key] = self._generation.get(key, 0) + 1

        def run() -> T:
            if self._generation.get(key) != generation:
                raise Superseded(key)
            return work()

        # done only after `apply` ran: a request waiting for it then finds the result in place (the
        # thread's own future is done a loop iteration before its callbacks run)
        settled: asyncio.Future[bool] = loop.create_future()
        job = Job(key, stamp, generation, settled)
        self.jobs[key] = job

        def done(ran: asyncio.Future[T]) -> None:
            applied = False
            try:
                error = None if ran.cancelled() else ran.exception()
                if ran.cancelled() or isinstance(error, Superseded):
                    pass
                elif error is not None:
                    log.error("analysis of %s failed", key, exc_info=error)
                elif self._generation.get(key) == generation:  # else: a newer job was handed over
                    apply(ran.result())
                    applied = True
            except Exception:  # one document must not take the server down
                log.exception("publishing the analysis of %s failed", key)
            finally:
                if not settled.done():
                    settled.set_result(applied)

        self.call(loop, run).add_done_callback(done)
        return job

    def cancel(self, key: str) -> None:
        """Forget ``key``'s jobs: one queued is skipped, one running is not applied."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self.jobs.pop(key, None)


async def settled_within(future: asyncio.Future[Any] | None, budget_s: float) -> bool:
    """Wait up to ``budget_s`` for ``future`` (never cancelling it); whether it is done."""
    if future is None or future.done():
        return True
    try:
        await asyncio.wait_for(asyncio.shield(future), budget_s)
    except asyncio.TimeoutError:
        return False
    except Exception:  # a failed analysis: the request answers from what was published before
        return True
    return True


__all__ = ["REQUEST_BUDGET_S", "AnalysisWorker", "Job", "Snapshot", "Superseded", "settled_within"]
