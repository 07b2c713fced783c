"""`Collector`: the cyclic collector held off during an analysis, run (young objects) after it, survivors
frozen; a bulk of young objects frozen uncollected; garbage cycles among frozen objects collected once
the frozen objects have grown as much again."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from unittest.mock import patch

import pytest

from warp_harness.server import collector as collector_module
from warp_harness.server.collector import Collector


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    """A garbage cycle (two nodes pointing at each other, nothing else at them); a weak reference to it."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()


def test_collector_is_held_off_until_after_the_analysis() -> None:
    collector = Collector()
    collector.start_up_done()
    collector.pause()
    assert not gc.isenabled()
    dead = _cycle()
    _ = [[n] for n in range(5000)]  # allocations that would have set a collection off
    assert dead() is not None
    collector.after_analysis()
    assert gc.isenabled()
    assert dead() is None  # the young cycle was collected


def test_survivors_are_frozen() -> None:
    collector = Collector()
    collector.start_up_done()
    collector.pause()
    kept = _Node()
    collector.after_analysis()
    assert gc.is_tracked(kept)
    assert all(obj is not kept for obj in gc.get_objects())  # frozen: no generation holds it


def test_a_bulk_is_frozen_without_a_young_collection() -> None:
    collector = Collector()
    collector.start_up_done()
    collector.pause()
    dead = _cycle()
    with patch.object(collector_module, "BULK", 100):
        _ = [[n] for n in range(1000)]
        collector.after_analysis()
    gc.collect()
    assert dead() is not None  # frozen, so skipped by collections
    gc.unfreeze()
    gc.collect()
    assert dead() is None


def test_frozen_garbage_is_collected_once_the_frozen_objects_grew_as_much_again() -> None:
    collector = Collector()
    collector.start_up_done()
    collector.pause()
    with patch.object(collector_module, "BULK", 100):
        dead = _cycle()
        _ = [[n] for n in range(1000)]
        collector.after_analysis()  # a bulk: the cycle is frozen
    gc.collect()
    assert dead() is not None
    grown = 0
    held: list[list[int]] = []
    while collector.full_collections == 0:
        collector.pause()
        held.extend([n] for n in range(50))  # survivors: the frozen objects grow
        grown += 50
        collector.after_analysis()
        assert grown < 10_000_000, "no full collection"
    assert dead() is None


def test_start_up_leaves_the_counting_of_its_frozen_objects_until_after_the_first_analysis() -> None:
    # counting them walks every one (~8 ms for the server's start-up): not before the first diagnostics
    collector = Collector()
    with patch.object(gc, "get_freeze_count", side_effect=AssertionError("counted at start-up")):
        collector.start_up_done()
    collector.pause()
    dead = _cycle()
    collector.after_analysis()
    assert gc.isenabled()
    assert dead() is None  # the first analysis is collected after as ever


def test_released_garbage_is_freed_by_the_next_after_analysis() -> None:
    collector = Collector()
    collector.start_up_done()
    collector.pause()
    held = _Node()
    dead = weakref.ref(held)
    collector.release([held])
    del held
    assert dead() is not None  # kept past the publication
    collector.after_analysis()
    assert dead() is None
