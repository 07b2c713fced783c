"""Rule ids of the dynamic tier and small helpers to build their records.

The static tier owns ``WH###``; findings of the daemon use ``WHD###`` so that
``select``/``ignore`` of static rules never hide a crash or a wrong result.
"""

from __future__ import annotations

from typing import Any

from warp_harness.record import Location, Record, Related, Severity, Stage

IMPORT_ERROR = "WHD001"
CODEGEN_ERROR = "WHD002"
COMPILE_ERROR = "WHD003"
DEVICE_SKIPPED = "WHD004"
CRASH = "WHD010"
BOUNDS = "WHD011"
TIMEOUT = "WHD012"
MEMORY = "WHD013"
MISMATCH = "WHD020"
UNWRITTEN = "WHD021"
NONFINITE = "WHD022"
INPUT_MUTATED = "WHD023"
CONTRACT_ERROR = "WHD024"
VALIDATED = "WHD025"
TARGET_MISSED = "WHD030"
MEASURED = "WHD031"
IMPLAUSIBLE = "WHD032"
TARGET_UNCHECKED = "WHD033"
UNTRUSTED = "WHD050"
INTERNAL = "WHD000"

DESCRIPTIONS = {
    IMPORT_ERROR: "the module raised while being imported (syntax error, missing annotation, ...)",
    CODEGEN_ERROR: "Warp's code generator rejected the kernel",
    COMPILE_ERROR: "the generated C++/CUDA did not compile or load",
    DEVICE_SKIPPED: "a configured device is not present; its stages were skipped",
    CRASH: "the worker process died while running the kernel (segfault, abort, illegal instruction)",
    BOUNDS: "a debug build asserted an out-of-bounds array access",
    TIMEOUT: "a launch or job ran past its time limit; the worker was killed",
    MEMORY: "the job ran past its memory limit",
    MISMATCH: "outputs differ from the reference beyond the tolerance",
    UNWRITTEN: "output elements still hold the NaN poison: the kernel never wrote them",
    NONFINITE: "NaN or Inf in the output where the reference is finite",
    INPUT_MUTATED: "the kernel modified an input array",
    CONTRACT_ERROR: "the contract itself is broken (generator/reference raised, unknown kernel ...)",
    VALIDATED: "the kernel matched its reference on every size and edge case",
    TARGET_MISSED: "a declared performance target was not met",
    MEASURED: "benchmark measurement",
    IMPLAUSIBLE: "a measurement faster than the hardware allows: the kernel may skip its work",
    TARGET_UNCHECKED: "a performance target could not be evaluated (no bytes/FLOPs or peak known)",
    UNTRUSTED: "the workspace is not trusted: only the static tier ran",
    INTERNAL: "an internal error of warp-harness",
}


def make_record(
    stage: Stage,
    rule: str,
    severity: Severity,
    path: str,
    line: int,
    message: str,
    *,
    col: int = 0,
    end_line: int | None = None,
    end_col: int | None = None,
    kernel: str | None = None,
    expected: Any = None,
    actual: Any = None,
    hint: str | None = None,
    related: tuple[Related, ...] = (),
) -> Record:
    return Record(
        stage=stage,
        rule=rule,
        severity=severity,
        location=Location(
            path=path, line=max(int(line), 1), col=col, end_line=end_line, end_col=end_col, kernel=kernel
        ),
        message=message,
        expected=expected,
        actual=actual,
        hint=hint,
        related=related,
    )
