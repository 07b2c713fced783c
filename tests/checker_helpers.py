"""Helpers shared by the tests of the static tier (imported by name: ``from checker_helpers import ...``)."""

from __future__ import annotations

from collections.abc import Callable

from warp_harness.record import Record

Analyse = Callable[..., list[Record]]


def rules_of(records: list[Record]) -> list[str]:
    return [r.rule for r in records]
