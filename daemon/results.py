"""Typed results of the daemon's jobs, dicts only at the boundaries.

- `FailingCase`: one input that broke a kernel (a wrong result, a crash, a timeout), as the
  validator or the crash handling found it; stored as a repro, re-run by ``replay``.
- `WorkerResult`: the worker's verdict on one module. It crosses the worker's pipe and the result
  cache on disk as a dict (``to_dict`` / ``from_dict``) and is typed everywhere else.
- `CheckReport`: the engine's answer for one file (static and dynamic records, each with its tier
  and streak), what the socket sends as a ``result`` message (``to_dict``).

A record stays a `Record` from where it is made to the socket; ``from_dict`` keeps every key it does
not know in ``extra`` so a dict read back is written out unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from warp_harness.record import Record, Severity, Stage


def _known(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls) if f.name != "extra")


@dataclass
class FailingCase:
    kind: str  # numeric | crash | timeout | memory ...
    kernel: str
    device: str = "cpu"
    size: int | None = None
    seed: int | None = None
    edge_case: str | None = None
    rule: str | None = None
    message: str | None = None
    contract: str | None = None
    original_size: int | None = None
    inputs: Any = None
    bounds_suspect: bool = False
    signal: str | None = None
    evidence: Any = None
    localized: str | None = None  # set by crash handling: line | bounds | no-bounds-error
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FailingCase:
        known = _known(cls)
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("kind", "numeric")
        values["kernel"] = str(values.get("kernel", ""))
        return cls(**values, extra={k: v for k, v in data.items() if k not in known})

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        return {**out, **self.extra}


@dataclass
class WorkerResult:
    status: str
    path: str
    records: list[Record] = field(default_factory=list)
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[FailingCase] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    seed: int | None = None
    devices: list[str] = field(default_factory=list)
    module_hash: str | None = None
    deps: list[list[str]] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    source_sha256: str | None = None
    worker_ms: float | None = None
    # set by the supervisor
    crashed_kernels: dict[str, str] = field(default_factory=dict)
    cacheable: bool = True
    elapsed_ms: float | None = None
    # set by the engine: the failing cases it stored (workspace-relative paths)
    repros: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerResult:
        known = _known(cls)
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known and v is not None}
        values["status"] = str(data.get("status") or "error")
        values["path"] = str(data.get("path") or "?")
        values["records"] = [Record.from_dict(r) for r in data.get("records") or []]
        values["failures"] = [FailingCase.from_dict(f) for f in data.get("failures") or []]
        for name in ("seed", "module_hash", "source_sha256", "worker_ms", "elapsed_ms"):
            values[name] = data.get(name)
        return cls(**values, extra={k: v for k, v in data.items() if k not in known})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        out["records"] = [r.to_dict() for r in self.records]
        out["failures"] = [f.to_dict() for f in self.failures]
        return {**out, **self.extra}


@dataclass
class ReportedRecord:
    """A record as the daemon reports it: which tier found it, and how many saves in a row it fired."""

    record: Record
    tier: str  # static | dynamic
    streak: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**self.record.to_dict(), "streak": self.streak, "tier": self.tier}


@dataclass
class CheckReport:
    path: str
    trusted: bool
    status: str | None = None
    cached: bool = False
    records: list[ReportedRecord] = field(default_factory=list)
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    repros: list[str] = field(default_factory=list)
    timings: dict[str, float | None] = field(default_factory=dict)
    seed: int | None = None
    module_hash: str | None = None
    devices: list[str] = field(default_factory=list)
    source_sha256: str | None = None
    elapsed_ms: float | None = None

    def dynamic(self) -> list[Record]:
        return [r.record for r in self.records if r.tier == "dynamic"]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "trusted": self.trusted,
            "cached": self.cached,
            "repros": list(self.repros),
            "status": self.status,
            "kernels": self.kernels,
            "timings": self.timings,
            "records": [r.to_dict() for r in self.records],
            "elapsed_ms": self.elapsed_ms,
        }
        if self.trusted:  # what only the dynamic tier knows
            out.update(
                seed=self.seed,
                module_hash=self.module_hash,
                devices=list(self.devices),
                source_sha256=self.source_sha256,
            )
        return out


# the file status a failing kernel gives, worst first: a job that ran to its end is `ok` only when none
# of its kernels crashed, hung or failed validation
_FAILED_STATUS: tuple[tuple[Stage, str], ...] = (
    (Stage.CRASH, "crash"),
    (Stage.TIMEOUT, "timeout"),
    (Stage.COMPILE, "error"),
    (Stage.INTERNAL, "error"),
    (Stage.NUMERIC, "fail"),
)


def file_status(job_status: str, records: list[Record]) -> str:
    """What a file's dynamic-tier status says to a reader: the worker's ``ok`` means the job ran to
    its end, not that its kernels passed, so an error of a kernel (crash, timeout, compile error,
    failed validation) replaces it; any other status (``import-error``, ``stale``...) stays."""
    if job_status != "ok":
        return job_status
    stages = {r.stage for r in records if r.severity is Severity.ERROR}
    return next((status for stage, status in _FAILED_STATUS if stage in stages), "ok")
