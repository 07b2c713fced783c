"""What a worker's death means: the record of a call that ended without a result.

The worker process (``worker_process``) reports how a call ended (``CallOutcome``: its last
``progress`` message, the end of its output, its exit status); this module turns that into
a record placed on the kernel, or on the array access a native assertion names, and into the
failing case to store. The supervisor decides what to do next (skip the kernel, re-run it in
debug mode: ``localized_record`` reads that re-run's outcome).
"""

from __future__ import annotations

import re
from pathlib import Path

from warp_harness.daemon import findings as F
from warp_harness.daemon.codegen_errors import NativeAssertion, parse_native_assertion
from warp_harness.daemon.discovery import read_text
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.results import FailingCase
from warp_harness.daemon.worker_process import (
    CONTEXT_LOST_EXIT,
    CONTEXT_LOST_EXITS,
    CONTEXT_LOST_LATE_EXIT,
    CONTEXT_LOST_MARK,
    CallOutcome,
    output_tail,
    signal_name,
)
from warp_harness.record import Location, Record, Related, Severity, Stage

BOUNDS_HINT = "an index reaches past the array: guard it with `if i < arr.shape[0]` or fix the launch dim"
# how a worker dies of an out-of-bounds access: release builds (segfault, or glibc aborting
# on a corrupted heap), debug builds (Warp's assert traps: SIGILL); on a GPU, the worker ends
# itself when a kernel's launch left its CUDA context unusable (steps/launching.py)
BOUNDS_SIGNALS = ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL", CONTEXT_LOST_EXITS[CONTEXT_LOST_EXIT])
CONTEXT_LOST_HINT = (
    "an illegal address on a GPU is usually an out-of-bounds index; the worker was restarted "
    "with a fresh CUDA context, in which every other kernel was judged"
)
# CUDA's device-side assert (a debug build's bounds check, or the bounds probe's assert):
# "<file>:<line>: <function>: block: [0,0,0], thread: [3,0,0] Assertion `<condition>` failed."
_DEVICE_ASSERT_RE = re.compile(
    r"^(?P<file>[^\n]+?):(?P<line>\d+): [^\n]*?block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] "
    r"Assertion `(?P<cond>[^\n]*)` failed\.",
    re.MULTILINE,
)
_SIGNAL_TEXT = {
    "SIGSEGV": "segmentation fault",
    "SIGILL": "illegal instruction",
    "SIGABRT": "abort",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGKILL": "killed",
}


def crash_record(
    outcome: CallOutcome,
    display: str,
    positions: dict[str, tuple[int, int, int]],
    opts: RuntimeOptions,
    path: Path | None = None,
) -> tuple[Record, FailingCase | None]:
    """The record of a call that ended without a result (timeout, memory, crash), and the
    failing case to store and localise when the worker died running one kernel on one input."""
    p = outcome.progress
    kernel = p.get("kernel")
    stage = p.get("stage") or "?"  # the step it died in, as the worker named it
    step = Step.parse(stage)
    line, col, end_col = positions.get(str(kernel), (1, 0, 0)) if kernel else (1, 0, 0)
    where = f"kernel `{kernel}`" if kernel else "the module"
    details = [f"stage {stage}"]
    for key in ("device", "size", "seed", "edge_case"):
        if p.get(key) is not None:
            details.append(f"{key.replace('_', ' ')} {p[key]}")
    context = ", ".join(details)
    assertion = parse_native_assertion(outcome.output) or parse_device_assertion(outcome.output)
    lost = context_lost_error(outcome)
    tail = output_tail(outcome.output, outcome.output_bytes, 1500) or None
    if outcome.kind == "timeout":
        budget = p.get("budget_s") or opts.timeout_s
        record = F.make_record(
            Stage.TIMEOUT,
            F.TIMEOUT,
            Severity.ERROR,
            display,
            line,
            f"{where} ran past its {float(budget):g} s limit ({context}); the worker was killed",
            col=col,
            end_col=end_col,
            kernel=kernel,
            hint="look for a loop whose exit condition never holds "
            "(a `while` over a value no thread changes)",
        )
        kind = "timeout"
    elif outcome.kind == "memory":
        record = F.make_record(
            Stage.CRASH,
            F.MEMORY,
            Severity.ERROR,
            display,
            line,
            f"{where} went past the {opts.memory_mb} MB memory limit ({context}); the worker was killed",
            col=col,
            end_col=end_col,
            kernel=kernel,
            hint="lower the contract's sizes or raise memory_mb in [tool.warp-harness.runtime]",
        )
        kind = "memory"
    else:
        sig = signal_name(outcome.returncode)
        text = _SIGNAL_TEXT.get(sig, sig)
        access = python_access(assertion, path) if assertion is not None and path else None
        if access is not None:
            a_line, a_col, a_end, text = access
            name = text.split("[", 1)[0]
            record = F.make_record(
                Stage.CRASH,
                F.BOUNDS,
                Severity.ERROR,
                display,
                a_line,
                f"{where} indexes `{name}` out of bounds at line {a_line}: `{text}` ({context})",
                col=a_col,
                end_col=a_end,
                kernel=kernel,
                hint=BOUNDS_HINT,
                related=(
                    Related(
                        Location(display, line, col, line, end_col, kernel=kernel),
                        f"in kernel `{kernel}`",
                    ),
                ),
            )
        elif assertion is not None and assertion.is_bounds_check:
            record = F.make_record(
                Stage.CRASH,
                F.BOUNDS,
                Severity.ERROR,
                display,
                line,
                f"{where} accessed an array out of bounds ({context}): Assertion failed: "
                f"'{assertion.condition}'; the worker died with {sig}",
                col=col,
                end_col=end_col,
                kernel=kernel,
                hint=BOUNDS_HINT,
            )
        elif lost is not None:
            late = outcome.returncode == CONTEXT_LOST_LATE_EXIT
            message = (
                f"the CUDA context was found unusable after the job ({lost}); the last step was "
                f"{where} ({context}); the worker was restarted and the result not kept"
                if late
                else f"{where} left the CUDA context unusable ({context}): {lost}"
            )
            if assertion is not None:
                message += f": Assertion failed: '{assertion.condition}'"
            record = F.make_record(
                Stage.CRASH,
                F.CRASH,
                Severity.ERROR,
                display,
                line,
                message,
                col=col,
                end_col=end_col,
                kernel=kernel,
                hint=CONTEXT_LOST_HINT,
            )
        else:
            message = f"the worker died with {sig} ({text}) while running {where} ({context})"
            if assertion is not None:
                message += f": Assertion failed: '{assertion.condition}'"
            record = F.make_record(
                Stage.CRASH,
                F.CRASH,
                Severity.ERROR,
                display,
                line,
                message,
                col=col,
                end_col=end_col,
                kernel=kernel,
                hint=(
                    "the compiler died (a full disk, or a cache folder removed while it wrote?); "
                    "the result is not cached, save again to retry"
                    if step is Step.COMPILE
                    else "a segfault in a kernel is usually an out-of-bounds index"
                )
                + "; the worker output ended with:\n"
                + (tail or "(nothing)"),
            )
        kind = "crash"
    failure: FailingCase | None = None
    if kernel and p.get("size") is not None and step is not None and step.runs_cases:
        failure = FailingCase(
            kind=kind,
            kernel=kernel,
            device=p.get("device", "cpu"),
            size=p.get("size"),
            seed=p.get("seed"),
            edge_case=p.get("edge_case"),
            rule=record.rule,
            message=record.message,
            signal=signal_name(outcome.returncode) if kind == "crash" else None,
            # a crash, or Warp's own assertion (placed at the header): the probe may place it
            bounds_suspect=kind == "crash"
            and not record.related
            and outcome.returncode != CONTEXT_LOST_LATE_EXIT,
        )
    return record, failure


def localized_record(
    path: Path,
    display: str,
    failure: FailingCase,
    status: str,
    records: list[Record],
    positions: dict[str, tuple[int, int, int]],
) -> Record | None:
    """The record of a bounds suspect's debug re-run (``status``, ``records``: its outcome)
    with the bounds probe: the access's line when the probe placed it; sets
    ``failure.localized``."""
    kernel = failure.kernel
    line, col, end_col = positions.get(kernel, (1, 0, 0))
    bounds = next((r for r in records if r.rule == F.BOUNDS), None)
    where = f"size {failure.size}, seed {failure.seed}"
    if bounds is not None and bounds.related:  # placed on the access itself
        failure.localized = "line"
        loc = bounds.location
        lines = (read_text(path) or "").splitlines()
        src = lines[loc.line - 1] if 0 < loc.line <= len(lines) else ""
        text = src[loc.col : loc.end_col] if loc.end_col else src.strip()
        name = text.split("[", 1)[0]
        return F.make_record(
            Stage.CRASH,
            F.BOUNDS,
            Severity.ERROR,
            display,
            loc.line,
            f"debug re-run: kernel `{kernel}` indexes `{name}` out of bounds at line {loc.line}: "
            f"`{text}` ({where})",
            col=loc.col,
            end_col=loc.end_col,
            kernel=kernel,
            hint=BOUNDS_HINT,
            related=bounds.related,
        )
    if bounds is not None:  # Warp's own assertion: an access the probe does not cover
        failure.localized = "bounds"
        return F.make_record(
            Stage.CRASH,
            F.BOUNDS,
            Severity.ERROR,
            display,
            line,
            f"debug re-run: kernel `{kernel}` indexes an array out of bounds ({where}); "
            + bounds.message.split("): ", 1)[-1],
            col=col,
            end_col=end_col,
            kernel=kernel,
            hint=BOUNDS_HINT + " (the access is not in the kernel's own statements: look at the "
            "@wp.func helpers it calls, or at an index that calls a function)",
        )
    if status in ("pass", "fail"):
        failure.localized = "no-bounds-error"
        return F.make_record(
            Stage.CRASH,
            F.BOUNDS,
            Severity.INFO,
            display,
            line,
            f"debug re-run of kernel `{kernel}` (size {failure.size}) found no out-of-bounds access",
            col=col,
            end_col=end_col,
            kernel=kernel,
        )
    return None


def is_transient(outcome: CallOutcome) -> bool:
    """Whether the worker's death says more about the machine than the code: SIGKILL from
    outside (the OOM killer, a user), or a death while importing/compiling (the compiler
    failing to write its output when the cache folder vanished: ``LLVM ERROR: IO failure``)."""
    if outcome.kind != "crash":
        return False
    if outcome.returncode == CONTEXT_LOST_LATE_EXIT:  # no launch of this job to blame
        return True
    return signal_name(outcome.returncode) == "SIGKILL" or crashed_building(outcome)


def context_lost_error(outcome: CallOutcome) -> str | None:
    """The CUDA error a worker that ended itself for a lost context named (steps/launching.py),
    or None for any other death."""
    if outcome.kind != "crash" or outcome.returncode not in CONTEXT_LOST_EXITS:
        return None
    found = [line for line in outcome.output.splitlines() if line.startswith(CONTEXT_LOST_MARK)]
    if not found:
        return "a sticky CUDA error"
    return found[-1][len(CONTEXT_LOST_MARK) :].strip() or "a sticky CUDA error"


def parse_device_assertion(output: str) -> NativeAssertion | None:
    """The first CUDA device-side assertion in a worker's output (a kernel built in debug mode:
    Warp's bounds check in a header, or a Python ``assert`` such as the bounds probe's, under
    its ``#line``), in the shape ``parse_native_assertion`` gives for the CPU's."""
    m = _DEVICE_ASSERT_RE.search(output)
    if m is None:
        return None
    return NativeAssertion(m.group("cond"), f"{m.group('file')}:{m.group('line')}")


def crashed_building(outcome: CallOutcome) -> bool:
    """Whether the worker died in a step that builds the module (import, compile)."""
    step = Step.parse(outcome.progress.get("stage"))
    return step is not None and step.builds


def python_access(assertion: NativeAssertion, path: Path) -> tuple[int, int, int, str] | None:
    """(line, col, end col, source text) of the array access a bounds probe assertion names, in
    ``path``; None for any other assertion.

    The build that fired may name another place than the kernel's now: Warp's module hash leaves
    out where a kernel's text stands, so a kernel cache serves a build of the same text made when
    it stood at other lines, or in another file (the same kernel in two files, a file moved), and
    its ``#line``s name that place. The access is then where its text is in ``path``, nearest the
    named line."""
    where = assertion.python_location
    text = assertion.python_source
    if where is None or text is None or "[" not in text or text.lstrip().startswith("assert"):
        return None
    file, line = where
    try:
        same_file = Path(file).resolve() == path.resolve()
    except OSError:
        same_file = False
    lines = (read_text(path) or "").splitlines()
    if same_file and 0 < line <= len(lines) and text in lines[line - 1]:
        col = lines[line - 1].find(text)
        return line, col, col + len(text), text
    found = [n for n, source in enumerate(lines, 1) if text in source]
    if not found:
        return (line, 0, 0, text) if same_file else None
    line = min(found, key=lambda n: abs(n - line))
    col = lines[line - 1].find(text)
    return line, col, col + len(text), text
