"""The pipeline's steps as the worker runs them on a saved module, in order: load (step
``import``), codegen, compile, validate, bench. Which steps there are, in which order, and
what each means to the supervisor, the cache and the editor is ``daemon/pipeline.py``; the
worker maps each step to its module's ``run`` (``worker._runners``).

Every step module imports Warp, so only the worker subprocess imports this package's
submodules. A step reads the job's ``JobSpec`` (what the supervisor asked for: frozen, the same
for every step) and adds its findings to the ``Job`` (records, the kernels' typed verdicts,
timings, notes); the worker sends what they found back as one ``WorkerResult``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.contract import Contract
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.results import FailingCase, KernelSummary
from warp_harness.record import Record
from warp_harness.wire.statuses import Build, Codegen, Verdict

Progress = Callable[..., None]


@dataclass
class KernelInfo:
    name: str
    line: int
    col: int
    end_col: int
    kernel: Any  # the warp Kernel defined in the module
    runnable: Any = None  # the kernel to launch: itself, or an isolated copy when its module is broken
    codegen: str = Codegen.PENDING  # a `Codegen` value
    compile: dict[str, str] = field(default_factory=dict)  # device -> a `Build` value
    validate: dict[str, str] = field(default_factory=dict)  # device -> a `Verdict` value
    bench: dict[str, dict[str, Any]] = field(default_factory=dict)
    contract: Contract | None = None
    # device -> the passing validation case at the benchmark size (validate.CaseOutcome): its
    # inputs and reference are what the benchmark's buffers are checked on after the timed loop
    validated_case: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> KernelSummary:
        """What the steps found of this kernel, typed: each verdict one of its enum's members
        (a step's misspelt verdict fails here, in the worker, not in a reader of the result)."""
        return {
            "line": self.line,
            "codegen": Codegen(self.codegen),
            "compile": {device: Build(state) for device, state in self.compile.items()},
            "validate": {device: Verdict(verdict) for device, verdict in self.validate.items()},
            "bench": dict(self.bench),
            "contract": self.contract.label if self.contract else None,
        }


@dataclass(frozen=True)
class JobSpec:
    """What the supervisor asked the worker to do (its job message), read by every step and
    changed by none."""

    id: int
    path: Path  # resolved file
    display_path: str  # the path records carry
    workspace: Path
    options: RuntimeOptions
    seed: int = 0
    # SHA-256 of the text the daemon's static tier analysed (None: not checked)
    expected_sha256: str | None = None
    # the kernels' positions the supervisor parsed, and the SHA-256 of the text (UTF-8) it
    # parsed them from: used when the worker imports that text, parsed again otherwise
    known_positions: dict[str, tuple[int, int, int]] | None = None
    known_positions_sha256: str | None = None
    # the cross-check (daemon/verdict.py): whether to send the outputs of passing cases back,
    # and which elements of large outputs (comparison.sampled)
    verdict: bool = False
    sample_seed: int | None = None


@dataclass
class Job:
    """One job in the worker: its frozen ``spec`` and what the steps found so far."""

    spec: JobSpec
    progress: Progress
    skip: dict[str, str] = field(default_factory=dict)  # kernel -> why its runs are skipped
    records: list[Record] = field(default_factory=list)
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    contracts: list[Contract] = field(default_factory=list)
    contract_files: list[Path] = field(default_factory=list)
    failures: list[FailingCase] = field(default_factory=list)  # cases for the failure library
    timings: dict[str, float] = field(default_factory=dict)
    module: Any = None  # the imported Python module
    module_hash: str | None = None
    deps: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256) of workspace files imported
    source_lines: list[str] = field(default_factory=list)
    devices: list[tuple[str, Any]] = field(default_factory=list)  # (alias, warp Device) present
    build_keys: dict[str, str] = field(default_factory=dict)  # "kernel@device" -> kernel cache key
    notes: dict[str, Any] = field(default_factory=dict)  # e.g. what the bounds probe checked
    # the spec's ``expected_sha256`` until the import; after it, the SHA-256 of the text imported
    source_sha256: str | None = None
    stale: bool = False  # the file changed after the daemon read it: the job describes no save
    # the cross-check's outputs of passing cases (``spec.verdict``)
    verdict_cases: list[dict[str, Any]] = field(default_factory=list)
    verdict_bytes: int = 0

    def __post_init__(self) -> None:
        if self.source_sha256 is None:
            self.source_sha256 = self.spec.expected_sha256

    def add(self, record: Record) -> None:
        self.records.append(record)

    # the spec's fields, read-only: a step reads ``job.path`` and cannot change it
    @property
    def id(self) -> int:
        return self.spec.id

    @property
    def path(self) -> Path:
        return self.spec.path

    @property
    def display_path(self) -> str:
        return self.spec.display_path

    @property
    def workspace(self) -> Path:
        return self.spec.workspace

    @property
    def options(self) -> RuntimeOptions:
        return self.spec.options

    @property
    def seed(self) -> int:
        return self.spec.seed

    @property
    def known_positions(self) -> dict[str, tuple[int, int, int]] | None:
        return self.spec.known_positions

    @property
    def known_positions_sha256(self) -> str | None:
        return self.spec.known_positions_sha256

    @property
    def verdict(self) -> bool:
        return self.spec.verdict

    @property
    def sample_seed(self) -> int | None:
        return self.spec.sample_seed
