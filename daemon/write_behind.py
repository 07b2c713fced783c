"""Writes done after the caller moved on: the daemon pushes a result first and its state files
(the result cache, the history) are written on one thread of their own while the client reads it.

Per key (a state file) only the latest write counts: a write handed over while an older one of
the same key is queued replaces it, and one handed over while it runs is run after it, so the
file ends holding the latest. ``flush`` waits until nothing is left; readers of the files call
it first, so they read what writing at once would have given. The thread is a
``ThreadPoolExecutor``'s: it stays for the next write, and the interpreter's exit waits for it.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable

_log = logging.getLogger(__name__)


class LatestWrites:
    def __init__(self, thread_name: str) -> None:
        self._thread_name = thread_name
        self._pending: dict[str, Callable[[], None]] = {}  # per key, the latest write not yet done
        self._done = threading.Condition()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None

    def submit(self, key: str, write: Callable[[], None]) -> None:
        """``write()`` on the writer thread, unless a later ``submit`` of ``key`` replaces it
        first. ``write`` reports its own failures; an exception it lets out is logged."""
        with self._done:
            queued = key in self._pending  # queued or running: its run takes this one too
            self._pending[key] = write
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=self._thread_name
                )
            if not queued:
                self._pool.submit(self._run, key)

    def _run(self, key: str) -> None:
        while True:
            with self._done:
                write = self._pending.get(key)
            if write is None:
                return
            try:
                write()
            except Exception:
                _log.exception("warp-harness: a deferred write of %s failed", key)
            with self._done:
                if self._pending.get(key) is write:
                    del self._pending[key]
                    self._done.notify_all()
                    return

    @property
    def pending(self) -> bool:
        return bool(self._pending)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every write handed over is done (or failed); False after ``timeout``."""
        with self._done:
            return self._done.wait_for(lambda: not self._pending, timeout)


__all__ = ["LatestWrites"]
