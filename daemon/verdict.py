"""The cross-check: a verdict computed where the kernel's code never ran (supervisor side).

The worker that imports a module also launches, times and checks its kernels, so what it
says can be gamed by the module (daemon/integrity.py lists what is watched there). The
cross-check does not take its word for a pass:

1. While the kernel worker imports and compiles, a second warm worker, the *verdict worker*,
   imports the module for its contracts, regenerates every validation case's inputs from the
   job's seed (chosen by the supervisor) and computes the contract's references
   (``validate.reference_cases``). It never builds or launches a kernel: no output of the
   kernel exists in its memory for a reference to echo. Whether it was done before the kernel
   worker's first launch is recorded (``notes.verdict.before_first_launch``).
2. The kernel worker sends the outputs of every passing case back (``verdict_cases``), read
   right after the launch and synchronise, before its own reference ran.
3. The daemon (this module: numpy only, no Warp, no workspace code) compares them with
   ``comparison.compare``, the validator's own comparison. A case that the kernel worker
   passed but that fails here is WHD065 (``verdict-disagrees``); a case whose inputs differ
   between the two workers (a generator that is not a function of its seed) is only noted.
   Outputs above ``comparison.SAMPLE_ELEMENTS`` elements are compared at both ends and at
   elements drawn with a seed the supervisor picks per job (the same in both workers).

What is trusted: the contract (generator and reference) is the specification, and it runs
in the verdict worker; the daemon's process and this comparison. What is not: everything
that runs in the kernel worker, the module's import included. docs/reliability.md
("Gaming the evaluator") has the details and the limits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.contract import Tolerance
from warp_harness.daemon import findings as F
from warp_harness.daemon.comparison import OutputReport, compare, decode_value, vacuous, within
from warp_harness.record import Record, Severity, Stage


def _tolerance(case: Mapping[str, Any], device: str) -> Tolerance:
    table = case.get("tolerance") or {}
    for key in (device, device.split(":")[0]):
        value = table.get(key)
        if isinstance(value, list | tuple) and len(value) == 2:
            return Tolerance(rtol=float(value[0]), atol=float(value[1]))
    return Tolerance()


def _record(
    rule: str,
    kernel: str,
    device: str,
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
    message: str,
    hint: str,
    *,
    stage: Stage = Stage.NUMERIC,
    expected: float | None = None,
    actual: float | None = None,
) -> Record:
    line, col, end_col = positions.get(kernel, (1, 0, 0))
    return F.make_record(
        stage,
        rule,
        Severity.ERROR,
        display,
        line,
        message,
        col=col,
        end_col=end_col,
        kernel=kernel,
        expected=expected,
        actual=actual,
        hint=hint,
    )


def _case_text(ref: Mapping[str, Any], device: str) -> str:
    return (
        f"on {device}, size {ref.get('size')}, seed {ref.get('seed')}"
        + (f", edge case `{ref['edge_case']}`" if ref.get("edge_case") else "")
        + (" (a size drawn from the seed)" if ref.get("drawn") else "")
    )


def _outputs_problem(
    ref: Mapping[str, Any], case: Mapping[str, Any], device: str, field: str, poisoned: bool
) -> tuple[str, OutputReport | None] | None:
    """(output name, its failing report, or None when the output is missing) of the first output
    of ``case[field]`` that does not match ``ref``; None when all match."""
    outputs = case.get(field) or {}
    tol = _tolerance(ref, device)
    for name, encoded in (ref.get("refs") or {}).items():
        if name not in outputs:
            return name, None
        got = decode_value(outputs[name])
        expected = decode_value(encoded)
        check_poison = poisoned and bool((ref.get("poisoned") or {}).get(name, True))
        if got.shape == expected.shape and within(got, expected, tol, check_poison):
            continue
        try:
            report = compare(name, got, expected, tol, check_poison)
        except Exception:  # another shape than the reference's
            return name, None
        if not report.ok:
            return name, report
    return None


def _vacuous(ref: Mapping[str, Any], device: str) -> bool:
    """Whether every output of the case already passes untouched (or as zeros)."""
    initial = ref.get("initial") or {}
    refs = ref.get("refs") or {}
    if not refs or any(name not in initial for name in refs):
        return False
    tol = _tolerance(ref, device)
    return all(vacuous(decode_value(initial[n]), decode_value(r), tol) for n, r in refs.items())


@dataclass
class Judgement:
    """What the supervisor decided about the kernel worker's claims."""

    records: list[Record] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    confirmed: set[tuple[str, str]] = field(default_factory=set)  # (kernel, device) passes that stand
    withdrawn: dict[tuple[str, str], str] = field(default_factory=dict)  # -> the verdict instead


def judge(
    claims: Mapping[str, Any],
    references: Mapping[str, Any] | None,
    shipped: Sequence[Mapping[str, Any]],
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
    *,
    why_no_references: str = "",
) -> Judgement:
    """Only the supervisor writes a pass, and it fails closed. ``claims``: the kernel worker's
    kernel summaries (``{kernel: {"validate": {device: "pass"...}, "bench": {...}}}``), which
    say only which kernels to judge: a claimed pass stands only when, for every case the
    verdict worker has a reference of (every validation case of the kernel), the kernel worker
    sent outputs for the same inputs (digest) that match it, the poisoned launch's included; and,
    for a kernel benchmarked on the CPU without in-place outputs, when the timed buffers' outputs
    match too. Everything else (no references, a verdict worker that failed or timed out, a
    missing case, a digest mismatch, outputs for a case with no reference) withdraws the pass
    with an error (WHD067); wrong outputs are WHD065 (WHD061 for the timed buffers); a check that
    untouched outputs already pass is WHD068."""
    out = Judgement()
    refs_list = list((references or {}).get("cases") or [])
    missing = set((references or {}).get("missing") or [])
    by_key = {str(c.get("key")): c for c in refs_list}
    got_by = {(str(c.get("key")), str(c.get("device") or "cpu")): c for c in shipped}
    notes: dict[str, Any] = {"references": len(refs_list), "compared": 0, "not_reproducible": 0}
    out.notes = notes
    for kernel, summary in claims.items():
        if not isinstance(summary, Mapping):
            continue
        for device, verdict_text in (summary.get("validate") or {}).items():
            if verdict_text != "pass":
                continue
            problem = _judge_kernel(
                str(kernel),
                str(device),
                summary,
                references,
                refs_list,
                missing,
                by_key,
                got_by,
                notes,
                display,
                positions,
                why_no_references,
                shipped,
            )
            if problem is None:
                out.confirmed.add((str(kernel), str(device)))
            else:
                out.records.append(problem)
                out.withdrawn[(str(kernel), str(device))] = (
                    "fail" if problem.rule in (F.VERDICT_DISAGREES, F.WRONG_AFTER_TIMING) else "error"
                )
    return out


_UNCONFIRMED_HINT = (
    "a pass needs evidence the kernel's own process cannot make: outputs for every case, matching "
    "references computed in a process that never ran the kernel. Make the contract's generator a "
    "function of (size, rng) and its reference a function of its inputs; leave the harness alone"
)


def _judge_kernel(
    kernel: str,
    device: str,
    summary: Mapping[str, Any],
    references: Mapping[str, Any] | None,
    refs_list: list[Mapping[str, Any]],
    missing: set[str],
    by_key: Mapping[str, Mapping[str, Any]],
    got_by: Mapping[tuple[str, str], Mapping[str, Any]],
    notes: dict[str, Any],
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
    why_no_references: str,
    shipped: Sequence[Mapping[str, Any]] = (),
) -> Record | None:
    def unconfirmed(reason: str) -> Record:
        return _record(
            F.VERDICT_UNCONFIRMED,
            kernel,
            device,
            display,
            positions,
            f"kernel `{kernel}` on {device}: the worker that ran it reported a pass, but {reason}; "
            "no pass without that evidence",
            _UNCONFIRMED_HINT,
        )

    if references is None or references.get("status") != "ok":
        return unconfirmed(
            "the verdict worker gave no references" + (f" ({why_no_references})" if why_no_references else "")
        )
    if kernel in missing:
        return unconfirmed("the verdict worker could not compute the reference of some case")
    cases = [r for r in refs_list if r.get("kernel") == kernel and not r.get("timed")]
    if not cases:
        return unconfirmed("the verdict worker has no reference for any of its cases")
    for key, dev in got_by:
        if dev == device and key.startswith(f"{kernel}|") and key not in by_key:
            return unconfirmed(f"it sent outputs for a case with no reference (`{key}`)")
    all_vacuous = True
    for ref in cases:
        key = str(ref.get("key"))
        case = got_by.get((key, device))
        if case is None:
            return unconfirmed(f"it sent no outputs for the case {_case_text(ref, device)}")
        if case.get("digest") != ref.get("digest"):
            notes["not_reproducible"] += 1
            return unconfirmed(
                f"the inputs it launched for the case {_case_text(ref, device)} differ from those the "
                "contract's generator gives for that seed in another process (a generator that is not "
                "a function of its size and rng, or inputs changed before the launch)"
            )
        notes["compared"] += 1
        for field_name, poisoned in (("outputs", False), ("poison_outputs", True)):
            if field_name == "poison_outputs" and not any((ref.get("poisoned") or {}).values()):
                continue
            bad = _outputs_problem(ref, case, device, field_name, poisoned)
            if bad is None:
                continue
            name, report = bad
            if report is None:
                return unconfirmed(
                    f"output `{name}` of the case {_case_text(ref, device)} is missing or misshapen"
                )
            return _disagrees(kernel, device, display, positions, ref, name, report, field_name)
        if not ref.get("edge_case") and not _vacuous(ref, device):
            all_vacuous = False
    if all_vacuous:
        return _record(
            F.VACUOUS_CHECK,
            kernel,
            device,
            display,
            positions,
            f"kernel `{kernel}` on {device}: its outputs pass every case of its contract before the "
            "kernel runs (left as the launch finds them, or all zeros, they already match the "
            "reference within the tolerance): the check cannot tell a kernel that does nothing from "
            "this one, so it is no pass",
            "make the generator draw inputs whose answer differs from the outputs' starting values "
            "(random values from `rng`, not zeros), or tighten the tolerance below the change the "
            "kernel makes",
        )
    return _judge_timed(
        kernel, device, summary, refs_list, by_key, shipped, display, positions, unconfirmed, notes
    )


def _judge_timed(
    kernel: str,
    device: str,
    summary: Mapping[str, Any],
    refs_list: list[Mapping[str, Any]],
    by_key: Mapping[str, Mapping[str, Any]],
    shipped: Sequence[Mapping[str, Any]],
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
    unconfirmed: Callable[[str], Record],
    notes: dict[str, Any],
) -> Record | None:
    """The benchmark's own buffers after its timed launches. CPU: one window, after the timed loop
    (its three sets). CUDA timed in several windows: at the end of every window, the set the next
    gap re-fills (with fresh inputs of a seed of its own, whose references the verdict worker
    computes too); the first window's is required (its buffers hold the inputs they were made
    with whatever their size), every one sent is judged."""
    timed = [r for r in refs_list if r.get("kernel") == kernel and r.get("timed")]
    bench = (summary.get("bench") or {}).get(device)
    if not isinstance(bench, Mapping) or not timed:
        return None
    sent = [
        (str(c.get("key")), c)
        for c in shipped
        if str(c.get("device") or "cpu") == device
        and c.get("timed")
        and str(c.get("key")).startswith(f"{kernel}|")
    ]
    if not sent:
        return unconfirmed("it sent none of the outputs its timed launches left in the benchmark's buffers")
    windows = bench.get("windows")
    if not device.startswith("cpu") and isinstance(windows, int) and windows > 1:
        judged = sorted({int(c["window"]) for _, c in sent if isinstance(c.get("window"), int)})
        notes.setdefault("timed_windows", {})[f"{kernel}@{device}"] = judged
        if 0 not in judged:
            return unconfirmed("it sent no outputs of the first timed window")
    for key, case in sent:
        ref = by_key.get(key)
        if ref is None:
            return unconfirmed(f"it sent timed outputs for inputs with no reference (`{key}`)")
        if case.get("digest") != ref.get("digest"):
            return unconfirmed(
                f"the benchmark's buffers (seed {ref.get('seed')}) held other inputs after the timed "
                "loop than the generator gives: the timed launches changed their inputs, or ran on others"
            )
        bad = _outputs_problem(ref, case, device, "outputs", False)
        if bad is None:
            continue
        name, report = bad
        if report is None:
            return unconfirmed(f"the timed output `{name}` is missing or misshapen")
        idx = report.first_bad
        where = idx[0] if idx is not None and len(idx) == 1 else idx
        return _record(
            F.WRONG_AFTER_TIMING,
            kernel,
            device,
            display,
            positions,
            f"kernel `{kernel}` on {device}: the outputs its timed launches left in the benchmark's "
            f"buffers (size {ref.get('size')}, seed {ref.get('seed')}"
            + (f", timed window {case['window']}" if isinstance(case.get("window"), int) else "")
            + f") are wrong: {report.n_bad} of "
            f"{report.n_total} elements of `{name}` compared differ from the reference (first bad index "
            f"{where}: got {report.got}, expected {report.expected}); the checked launches passed, the "
            "timed ones did not compute the answer",
            "compute the answer on every launch: a kernel that tells checked launches from timed ones "
            "is timed doing other work",
            expected=report.expected,
            actual=report.got,
        )
    return None


def _disagrees(
    kernel: str,
    device: str,
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
    ref: Mapping[str, Any],
    name: str,
    report: OutputReport,
    field_name: str,
) -> Record:
    idx = report.first_bad
    where = idx[0] if idx is not None and len(idx) == 1 else idx
    launch_kind = (
        "the launch whose outputs start as poison" if field_name == "poison_outputs" else "the checked launch"
    )
    return _record(
        F.VERDICT_DISAGREES,
        kernel,
        device,
        display,
        positions,
        f"kernel `{kernel}` {_case_text(ref, device)}: the worker that ran the kernel passed it, but "
        f"{report.n_bad} of {report.n_total} elements of `{name}` compared ({launch_kind}) differ from "
        "the reference computed in a separate worker that never ran the kernel (first bad index "
        f"{where}: got {report.got}, expected {report.expected}); the kernel worker's own check was "
        "not the kernel's answer",
        "the reference or the comparison saw something other than the kernel's output in the "
        "kernel's process: a reference that reads the outputs (or a file) instead of computing from "
        "its inputs, or a patched comparison",
        expected=report.expected,
        actual=report.got,
    )


def not_hermetic(
    path: Path,
    text: str,
    claims: Mapping[str, Any],
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
    required: bool,
    reason: object = None,
) -> list[Record]:
    """WHD069 for every contracted kernel of a module the worker had to import (its top-level
    code ran in the process that launched and timed it): decided here, in the supervisor, from
    the module's text and its sibling contracts' (``hermetic_build.why_not``, the test the worker
    makes on the same text before building or importing), never from what the worker reports
    about itself. ``claims``: the worker's kernel summaries (which kernels have a contract).
    A warning; an error under ``--require-hermetic``. ``reason``: ``why_not_hermetic(path, text)``
    when the caller computed it already (the supervisor does, while the worker runs)."""
    why = why_not_hermetic(path, text) if reason is None else reason
    if not isinstance(why, str) or why == HERMETIC:
        return []
    contracted: list[str | None] = [
        k for k, s in claims.items() if isinstance(s, Mapping) and (s.get("contract") or s.get("validate"))
    ]
    severity = Severity.ERROR if required else Severity.WARNING
    out: list[Record] = []
    for kernel in contracted or [None]:
        line, col, end_col = positions.get(kernel, (1, 0, 0)) if kernel else (1, 0, 0)
        what = f"the verdict on `{kernel}`" if kernel else "the verdict on this module's contracts"
        out.append(
            F.make_record(
                Stage.NUMERIC,
                F.NOT_HERMETIC,
                severity,
                display,
                line,
                f"{what} is not hermetic: the worker that launched and timed it imported the module, "
                f"whose top-level code ran there, because {why}",
                col=col,
                end_col=end_col or None,
                kernel=kernel,
                hint="define the kernel at module level with `@wp.kernel` (reading only `@wp.func`s, "
                "`@wp.struct`s and constants of the module) and its contract at the module's top level "
                "(or in a sibling `<module>_contract.py`), reaching only functions, literals and "
                "library imports",
            )
        )
    return out


def tampering(
    text: str, claims: dict[str, Any], display: str, positions: Mapping[str, tuple[int, int, int]]
) -> list[Record]:
    """WHD060 for a module built hermetically whose code would patch the evaluator
    (daemon/tamper_scan.py): the patch never ran where its kernels were launched and timed, but a
    module that tries to forge its verdict gets none: every contracted kernel's pass is taken back
    (``claims``, changed in place). One record per patch, on its line; none when nothing is
    contracted (no verdict to forge)."""
    from warp_harness.daemon import tamper_scan

    found = tamper_scan.patches(text)
    contracted = [
        k for k, s in claims.items() if isinstance(s, dict) and (s.get("contract") or s.get("validate"))
    ]
    if not found or not contracted:
        return []
    for kernel in contracted:
        verdicts = claims[kernel].get("validate")
        if isinstance(verdicts, dict):
            for device, state in list(verdicts.items()):
                if state == "pass":
                    verdicts[device] = "error"
    names = ", ".join(f"`{k}`" for k in contracted)
    return [
        F.make_record(
            Stage.NUMERIC,
            F.EVALUATOR_PATCHED,
            Severity.ERROR,
            display,
            patch.line,
            f"the module's code {patch.what} at import: it would change what the harness launches, times "
            f"or compares with; the module was built from its text, so it did not run where {names} "
            "ran, but a module that patches the evaluator gets no pass",
            col=patch.col,
            kernel=contracted[0] if len(contracted) == 1 else None,
            hint="remove the patch (the record's line); launch and time the kernel as it is",
        )
        for patch in found
    ]


HERMETIC = ""  # ``why_not_hermetic``'s answer for a module built from its text (or with no contract)


def why_not_hermetic(path: Path, text: str, siblings: Sequence[Path] | None = None) -> str:
    """Why the module ``path`` (its text ``text``) is not checked hermetically, from text alone
    (``hermetic_build.why_not`` on it and its sibling contracts); ``HERMETIC`` when it is, or when
    it has no contract (no verdict to be hermetic or not). ``siblings``: its contract siblings
    when the caller listed them already (the supervisor does, to decide ``may_import``)."""
    from warp_harness.daemon import hermetic_build
    from warp_harness.daemon.discovery import contract_siblings, has_contracts

    if siblings is None:
        siblings = contract_siblings(path)
    if not siblings and not has_contracts(text):
        return HERMETIC
    texts = []
    for s in siblings:
        try:
            texts.append((s.name, s.read_text(encoding="utf-8", errors="replace")))
        except OSError:
            texts.append((s.name, ""))
    reason = hermetic_build.why_not(text, str(path), hermetic_build.module_name_for(path)[0], texts)
    return HERMETIC if reason is None else reason
