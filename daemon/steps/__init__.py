"""The pipeline's steps as the worker runs them on a saved module, in order: load (step
``import``), codegen, compile, validate, bench. Which steps there are, in which order, and
what each means to the supervisor, the cache and the editor is ``daemon/pipeline.py``; the
worker maps each step to its module's ``run`` (``worker._runners``).

Every step module imports Warp, so only the worker subprocess imports this package's
submodules. ``Job`` carries the state between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.contract import Contract
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.results import FailingCase
from warp_harness.record import Record

Progress = Callable[..., None]


@dataclass
class KernelInfo:
    name: str
    line: int
    col: int
    end_col: int
    kernel: Any  # the warp Kernel defined in the module
    runnable: Any = None  # the kernel to launch: itself, or an isolated copy when its module is broken
    codegen: str = "pending"  # ok | error | generic
    compile: dict[str, str] = field(default_factory=dict)  # device -> compiled | cached | error
    validate: dict[str, str] = field(default_factory=dict)  # device -> pass | fail | error
    bench: dict[str, dict[str, Any]] = field(default_factory=dict)
    contract: Contract | None = None
    # device -> the passing validation case at the benchmark size (validate.CaseOutcome): its
    # inputs and reference are what the benchmark's buffers are checked on after the timed loop
    validated_case: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "codegen": self.codegen,
            "compile": dict(self.compile),
            "validate": dict(self.validate),
            "bench": dict(self.bench),
            "contract": self.contract.label if self.contract else None,
        }


@dataclass
class Job:
    id: int
    path: Path  # resolved file
    display_path: str  # the path records carry
    workspace: Path
    options: RuntimeOptions
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
    seed: int = 0
    devices: list[tuple[str, Any]] = field(default_factory=list)  # (alias, warp Device) present
    build_keys: dict[str, str] = field(default_factory=dict)  # "kernel@device" -> kernel cache key
    notes: dict[str, Any] = field(default_factory=dict)  # e.g. what the bounds probe checked
    # SHA-256 of the text the daemon's static tier analysed (None: not checked); after the
    # import, the SHA-256 of the text the worker imported
    source_sha256: str | None = None
    stale: bool = False  # the file changed after the daemon read it: the job describes no save
    # the kernels' positions the supervisor parsed, and the SHA-256 of the text (UTF-8) it
    # parsed them from: used when the worker imports that text, parsed again otherwise
    known_positions: dict[str, tuple[int, int, int]] | None = None
    known_positions_sha256: str | None = None
    # the cross-check (daemon/verdict.py): whether to send the outputs of passing cases back,
    # and those outputs
    verdict: bool = False
    sample_seed: int | None = None  # which elements of large outputs are sent (comparison.sampled)
    verdict_cases: list[dict[str, Any]] = field(default_factory=list)
    verdict_bytes: int = 0

    def add(self, record: Record) -> None:
        self.records.append(record)
