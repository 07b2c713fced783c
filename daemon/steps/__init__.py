"""The pipeline's steps as the worker runs them on a saved module, in order: load (step
``import``), codegen, compile, validate, bench. Which steps there are, in which order, and
what each means to the supervisor, the cache and the editor is ``daemon/pipeline.py``.

Every step module imports Warp, so only the worker subprocess imports this package's
submodules. Each step is a function of typed inputs returning a typed, frozen outcome:

- ``load.load(spec, progress)`` -> ``LoadedModule`` (the module, its kernels as frozen
  ``KernelInfo``, contracts, dependencies, source);
- ``codegen.run``, ``compile.run``, ``validate.run``, ``bench.run`` take a ``StepContext`` (the
  job's frozen ``JobSpec``, the progress callback, and what this one step finds while it runs: no
  other step sees it) and the outputs of the steps before them (the kernels, the devices compile
  found, the verdicts so far), and return a ``StepOutcome`` (records, timings, notes, per-kernel
  ``KernelVerdicts``, failing cases, the cross-check's outputs; compile also the devices and builds).

The worker folds the outcomes into the one ``WorkerResult`` it sends (daemon/job_fold.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

from warp_harness.contract import Contract
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.results import FailingCase, KernelSummary
from warp_harness.record import Record
from warp_harness.wire.statuses import Build, Codegen, Verdict

Progress = Callable[..., None]
# one passing case's outputs sent to the supervisor for the cross-check (daemon/verdict.py)
VerdictCase = dict[str, Any]


@dataclass(frozen=True)
class KernelInfo:
    """A kernel of the loaded module: where it is, the Warp kernel, the one to launch, its contract."""

    name: str
    line: int
    col: int
    end_col: int
    kernel: Any  # the warp Kernel defined in the module
    runnable: Any = None  # the kernel to launch: itself, or an isolated copy when its module is broken
    contract: Contract | None = None


@dataclass(frozen=True)
class KernelVerdicts:
    """What the steps found of one kernel so far; each step returns the verdicts it changed."""

    codegen: str = Codegen.PENDING  # a `Codegen` value
    compile: Mapping[str, str] = field(default_factory=dict)  # device -> a `Build` value
    validate: Mapping[str, str] = field(default_factory=dict)  # device -> a `Verdict` value
    bench: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    # device -> the passing validation case at the benchmark size (validate.CaseOutcome): its
    # inputs and reference are what the benchmark's buffers are checked on after the timed loop
    validated_case: Mapping[str, Any] = field(default_factory=dict)

    def summary(self, info: KernelInfo) -> KernelSummary:
        """What the steps found of this kernel, typed: each verdict one of its enum's members
        (a step's misspelt verdict fails here, in the worker, not in a reader of the result)."""
        return {
            "line": info.line,
            "codegen": Codegen(self.codegen),
            "compile": {device: Build(state) for device, state in self.compile.items()},
            "validate": {device: Verdict(verdict) for device, verdict in self.validate.items()},
            "bench": dict(self.bench),
            "contract": info.contract.label if info.contract else None,
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
    # whether the module may be imported (its top-level code run) when it cannot be built from its
    # text: the supervisor grants it only after deciding so itself (daemon/supervisor.py), so a
    # module whose files change between the two decisions never runs in a job the supervisor
    # believes hermetic
    may_import: bool = True


@dataclass(frozen=True)
class LoadedModule:
    """The ``import`` step's outcome: the module and what it defines, or why there is none."""

    ok: bool  # it imported (and is the text the job was made for)
    stale: bool  # the file changed after the daemon read it: the job describes no save
    records: tuple[Record, ...]
    notes: Mapping[str, Any]
    source_lines: tuple[str, ...] = ()
    # the spec's ``expected_sha256`` until the import; after it, the SHA-256 of the text imported
    source_sha256: str | None = None
    module: ModuleType | None = None  # the imported Python module
    kernels: Mapping[str, KernelInfo] = field(default_factory=dict)
    contracts: tuple[Contract, ...] = ()
    contract_files: tuple[Path, ...] = ()
    deps: tuple[tuple[str, str], ...] = ()  # (path, sha256) of workspace files imported


@dataclass(frozen=True)
class Built:
    """What ``compile`` adds beside verdicts: the devices present and the builds made."""

    devices: tuple[tuple[str, Any], ...]  # (alias, warp Device) present
    build_keys: Mapping[str, str]  # "kernel@device" -> kernel cache key
    module_hash: str | None
    kernels: Mapping[str, KernelInfo]  # the kernels, a broken module's good ones isolated


@dataclass(frozen=True)
class StepOutcome:
    """What one step found: the worker folds it into the job's result (daemon/job_fold.py)."""

    records: tuple[Record, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    notes: Mapping[str, Any] = field(default_factory=dict)
    verdicts: Mapping[str, KernelVerdicts] = field(default_factory=dict)  # the kernels it judged
    failures: tuple[FailingCase, ...] = ()  # cases for the failure library
    verdict_cases: tuple[VerdictCase, ...] = ()  # the cross-check's outputs of passing cases
    verdict_bytes: int = 0  # the cross-check's bytes sent by the job so far, this step's included
    built: Built | None = None  # compile's


@dataclass
class StepContext:
    """One step while it runs: the job's frozen ``spec``, the progress callback, the kernels left
    out of runs (``skip``), and what this step found so far. Made for one step and dropped once
    its ``outcome()`` is taken: nothing written here reaches another step but through it."""

    spec: JobSpec
    progress: Progress
    skip: Mapping[str, str] = field(default_factory=dict)  # kernel -> why its runs are skipped
    source_lines: tuple[str, ...] = ()
    # the verdicts of the steps before (read) and this step's (written through the setters)
    verdicts: dict[str, KernelVerdicts] = field(default_factory=dict)
    verdict_bytes: int = 0  # the cross-check's budget used, earlier steps' included
    records: list[Record] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)
    failures: list[FailingCase] = field(default_factory=list)
    verdict_cases: list[VerdictCase] = field(default_factory=list)
    _judged: list[str] = field(default_factory=list)

    def add(self, record: Record) -> None:
        self.records.append(record)

    def verdicts_of(self, kernel: str) -> KernelVerdicts:
        return self.verdicts.get(kernel) or KernelVerdicts()

    def _set(self, kernel: str, **changes: Any) -> None:
        self.verdicts[kernel] = replace(self.verdicts_of(kernel), **changes)
        if kernel not in self._judged:
            self._judged.append(kernel)

    def set_codegen(self, kernel: str, state: str) -> None:
        self._set(kernel, codegen=state)

    def set_build(self, kernel: str, device: str, state: str) -> None:
        self._set(kernel, compile={**self.verdicts_of(kernel).compile, device: state})

    def set_verdict(self, kernel: str, device: str, verdict: str) -> None:
        self._set(kernel, validate={**self.verdicts_of(kernel).validate, device: verdict})

    def set_validated_case(self, kernel: str, device: str, case: Any) -> None:
        self._set(kernel, validated_case={**self.verdicts_of(kernel).validated_case, device: case})

    def set_bench(self, kernel: str, device: str, measured: dict[str, Any]) -> None:
        self._set(kernel, bench={**self.verdicts_of(kernel).bench, device: measured})

    def outcome(self, built: Built | None = None) -> StepOutcome:
        return StepOutcome(
            records=tuple(self.records),
            timings=dict(self.timings),
            notes=dict(self.notes),
            verdicts={name: self.verdicts[name] for name in self._judged},
            failures=tuple(self.failures),
            verdict_cases=tuple(self.verdict_cases),
            verdict_bytes=self.verdict_bytes,
            built=built,
        )

    # the spec's fields, read-only: a step reads ``ctx.path`` and cannot change it
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
    def verdict(self) -> bool:
        return self.spec.verdict

    @property
    def sample_seed(self) -> int | None:
        return self.spec.sample_seed
