"""daemon/write_behind.py: per key only the latest write, run after one under way; flush waits."""

from __future__ import annotations

import threading

from warp_harness.daemon.write_behind import LatestWrites


def test_a_write_handed_over_during_another_of_its_key_runs_after_it_and_queued_ones_are_replaced() -> None:
    writes = LatestWrites("test-writer")
    running, release = threading.Event(), threading.Event()
    done: list[str] = []

    def first() -> None:
        running.set()
        release.wait(10)
        done.append("first")

    writes.submit("a", first)
    assert running.wait(10)
    writes.submit("a", lambda: done.append("second"))  # replaced before it runs
    writes.submit("a", lambda: done.append("third"))
    writes.submit("b", lambda: done.append("other key"))
    assert writes.pending and not writes.flush(0.05)
    release.set()
    assert writes.flush(10) and not writes.pending
    assert done == ["first", "third", "other key"]


def test_a_write_that_raises_does_not_leave_flush_waiting() -> None:
    writes = LatestWrites("test-writer")

    def broken() -> None:
        raise OSError("disk full")

    writes.submit("a", broken)
    assert writes.flush(10)
    writes.submit("a", lambda: None)
    assert writes.flush(10)
