"""What the server knows about each open document: its last analysis and the daemon's last result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from warp_harness.record import Record

if TYPE_CHECKING:
    from warp_harness.engine import Analysis


@dataclass(eq=False, repr=False)
class StaticState:
    """A document's last static analysis and the text and version it is for."""

    version: int | None
    text: str
    analysis: Analysis


@dataclass(eq=False, repr=False)
class DynamicState:
    """A file's last daemon result: dynamic-tier records, per-kernel verdicts, and when."""

    records: list[Record]
    kernels: dict[str, Any]
    status: str
    received: float
