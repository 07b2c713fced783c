"""One worker job's result: the outcomes of its steps folded, in pipeline order, into the one
``WorkerResult`` the worker sends (daemon/worker.py).

A step (daemon/steps/) never sees this object: the worker hands each step a fresh
``StepContext`` (``context()``) and the typed outputs of the steps before it (the kernels, the
devices, the verdicts so far), and folds what it returns (``take``). The worker's own checks
between steps (the harness's functions rebound, a contract changed: worker.check_integrity,
worker.check_contracts) add their records and notes here.

No Warp import: the fold is plain data.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.contract import Contract
from warp_harness.daemon.results import FailingCase, WorkerResult
from warp_harness.daemon.steps import (
    JobSpec,
    KernelInfo,
    KernelVerdicts,
    LoadedModule,
    Progress,
    StepContext,
    StepOutcome,
    VerdictCase,
)
from warp_harness.record import Record
from warp_harness.wire.statuses import Status


def merge_notes(into: MutableMapping[str, Any], notes: Mapping[str, Any]) -> None:
    """A step's notes added to the job's: lists grow, tables merge, counts add up, the rest is set
    (as one shared dict of notes did when every step wrote into it)."""
    for key, value in notes.items():
        held = into.get(key)
        if isinstance(held, list) and isinstance(value, list):
            held.extend(value)
        elif isinstance(held, dict) and isinstance(value, dict):
            held.update(value)
        elif isinstance(held, int) and isinstance(value, int) and not isinstance(held | value, bool):
            into[key] = held + value
        else:
            into[key] = value


@dataclass
class JobFold:
    """What a job's steps found so far (the worker's, never a step's)."""

    spec: JobSpec
    progress: Progress
    skip: dict[str, str] = field(default_factory=dict)  # kernel -> why its runs are skipped
    records: list[Record] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    verdicts: dict[str, KernelVerdicts] = field(default_factory=dict)
    contracts: tuple[Contract, ...] = ()
    contract_files: tuple[Path, ...] = ()
    deps: tuple[tuple[str, str], ...] = ()
    source_lines: tuple[str, ...] = ()
    source_sha256: str | None = None
    stale: bool = False
    failures: list[FailingCase] = field(default_factory=list)
    verdict_cases: list[VerdictCase] = field(default_factory=list)
    verdict_bytes: int = 0
    devices: tuple[tuple[str, Any], ...] = ()  # (alias, warp Device) present
    build_keys: dict[str, str] = field(default_factory=dict)  # "kernel@device" -> kernel cache key
    module_hash: str | None = None

    def __post_init__(self) -> None:
        if self.source_sha256 is None:
            self.source_sha256 = self.spec.expected_sha256

    def add(self, record: Record) -> None:
        self.records.append(record)

    def verdicts_of(self, kernel: str) -> KernelVerdicts:
        return self.verdicts.get(kernel) or KernelVerdicts()

    def context(self) -> StepContext:
        """A fresh context for the next step: the spec, the kernels it skips, the source, the
        verdicts so far and the cross-check's budget used."""
        return StepContext(
            self.spec,
            self.progress,
            skip=dict(self.skip),
            source_lines=self.source_lines,
            verdicts=dict(self.verdicts),
            verdict_bytes=self.verdict_bytes,
        )

    def take_loaded(self, loaded: LoadedModule) -> None:
        self.records.extend(loaded.records)
        merge_notes(self.notes, loaded.notes)
        self.kernels = dict(loaded.kernels)
        self.contracts = loaded.contracts
        self.contract_files = loaded.contract_files
        self.deps = loaded.deps
        self.source_lines = loaded.source_lines
        self.source_sha256 = loaded.source_sha256
        self.stale = loaded.stale

    def take(self, outcome: StepOutcome, *, records: bool = True) -> None:
        """A step's outcome folded in (``records=False``: all but its records)."""
        if records:
            self.records.extend(outcome.records)
        for key, ms in outcome.timings.items():  # a time two steps spend on one thing adds up
            self.timings[key] = self.timings.get(key, 0.0) + ms
        merge_notes(self.notes, outcome.notes)
        self.verdicts.update(outcome.verdicts)
        self.failures.extend(outcome.failures)
        self.verdict_cases.extend(outcome.verdict_cases)
        self.verdict_bytes = outcome.verdict_bytes  # counted on from this job's total
        if outcome.built is not None:
            self.devices = outcome.built.devices
            self.build_keys.update(outcome.built.build_keys)
            self.module_hash = outcome.built.module_hash
            self.kernels = dict(outcome.built.kernels)

    def result(self, status: str) -> dict[str, Any]:
        """The job's `WorkerResult`, as the dict that crosses the pipe."""
        extra: dict[str, Any] = {
            "build_keys": self.build_keys,
            "contract_files": [str(p) for p in self.contract_files],
        }
        if self.verdict_cases:  # taken out by the supervisor (daemon/verdict.py), never cached
            extra["verdict_cases"] = self.verdict_cases
        return WorkerResult(
            status=Status(status),
            path=self.spec.display_path,
            records=sorted(self.records, key=lambda r: r.sort_key()),
            kernels={name: self.verdicts_of(name).summary(info) for name, info in self.kernels.items()},
            timings=self.timings,
            module_hash=self.module_hash,
            deps=[list(d) for d in self.deps],
            failures=self.failures,
            seed=self.spec.seed,
            devices=[alias for alias, _ in self.devices],
            notes=self.notes,
            source_sha256=self.source_sha256,
            extra=extra,
        ).to_dict()
