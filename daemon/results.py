"""Typed results of the daemon's jobs, dicts only at the boundaries.

- `FailingCase`: one input that broke a kernel (a wrong result, a crash, a timeout), as the
  validator or the crash handling found it; stored as a repro, re-run by ``replay``.
- `WorkerResult`: the worker's verdict on one module. It crosses the worker's pipe and the result
  cache on disk as a dict (``to_dict`` / ``from_dict``) and is typed everywhere else.
- `CheckReport`: the engine's answer for one file (static and dynamic records, each with its tier
  and streak), what the socket sends as a ``result`` message: ``wire.messages.Report``, the schema
  the daemon and its clients share.

A record stays a `Record` from where it is made to the socket; ``from_dict`` keeps every key it does
not know in ``extra`` so a dict read back is written out unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from warp_harness.record import Record, Severity, Stage
from warp_harness.wire.messages import KernelSummary, Report, ReportedRecord
from warp_harness.wire.statuses import Status

__all__ = ["CheckReport", "FailingCase", "KernelSummary", "ReportedRecord", "WorkerResult", "file_status"]

CheckReport = Report  # the engine's name for the report a `result` message carries


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
    status: Status
    path: str
    records: list[Record] = field(default_factory=list)
    kernels: dict[str, KernelSummary] = field(default_factory=dict)
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

    def __post_init__(self) -> None:
        self.status = Status(self.status)  # a caller's plain string, typed

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerResult:
        known = _known(cls)
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known and v is not None}
        values["status"] = Status.parse(data.get("status")) or Status.ERROR
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


# the file status a failing kernel gives, worst first: a job that ran to its end is `ok` only when none
# of its kernels crashed, hung or failed validation
_FAILED_STATUS: tuple[tuple[Stage, Status], ...] = (
    (Stage.CRASH, Status.CRASH),
    (Stage.TIMEOUT, Status.TIMEOUT),
    (Stage.COMPILE, Status.ERROR),
    (Stage.INTERNAL, Status.ERROR),
    (Stage.NUMERIC, Status.FAIL),
)


def file_status(job_status: Status, records: list[Record]) -> Status:
    """What a file's dynamic-tier status says to a reader: the worker's ``ok`` means the job ran to
    its end, not that its kernels passed, so an error of a kernel (crash, timeout, compile error,
    failed validation) replaces it; any other status (``import-error``, ``stale``...) stays."""
    if job_status != Status.OK:
        return job_status
    stages = {r.stage for r in records if r.severity is Severity.ERROR}
    return next((status for stage, status in _FAILED_STATUS if stage in stages), Status.OK)
