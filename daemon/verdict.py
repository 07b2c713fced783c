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

from collections.abc import Mapping, Sequence
from typing import Any

from warp_harness.contract import Tolerance
from warp_harness.daemon import findings as F
from warp_harness.daemon.comparison import compare, decode_value, within
from warp_harness.record import Record, Severity, Stage


def _tolerance(case: Mapping[str, Any], device: str) -> Tolerance:
    table = case.get("tolerance") or {}
    for key in (device, device.split(":")[0]):
        value = table.get(key)
        if isinstance(value, list | tuple) and len(value) == 2:
            return Tolerance(rtol=float(value[0]), atol=float(value[1]))
    return Tolerance()


def cross_check(
    references: Sequence[Mapping[str, Any]],
    shipped: Sequence[Mapping[str, Any]],
    display: str,
    positions: Mapping[str, tuple[int, int, int]],
) -> tuple[list[Record], dict[str, Any]]:
    """(WHD065 records, notes) for the outputs the kernel worker sent (``shipped``) against
    the verdict worker's ``references``, matched by case key."""
    by_key = {str(c.get("key")): c for c in references}
    records: list[Record] = []
    notes: dict[str, Any] = {"references": len(references), "compared": 0, "not_reproducible": 0}
    reported: set[tuple[str, str]] = set()
    for case in shipped:
        ref = by_key.get(str(case.get("key")))
        if ref is None:
            continue
        if case.get("digest") != ref.get("digest"):
            notes["not_reproducible"] += 1  # the generator is not a function of (size, seed)
            continue
        device = str(case.get("device") or "cpu")
        kernel = str(ref.get("kernel") or "?")
        notes["compared"] += 1
        if (kernel, device) in reported:
            continue
        outputs = case.get("outputs") or {}
        for name, encoded in (ref.get("refs") or {}).items():
            if name not in outputs:
                continue
            got = decode_value(outputs[name])
            expected = decode_value(encoded)
            poisoned = bool((ref.get("poisoned") or {}).get(name, True))
            tol = _tolerance(ref, device)
            if got.shape == expected.shape and within(got, expected, tol, poisoned):
                continue
            try:
                report = compare(name, got, expected, tol, poisoned)
            except Exception:  # a shape the reference disagrees on: the kernel worker reports it
                continue
            if report.ok:
                continue
            reported.add((kernel, device))
            line, col, end_col = positions.get(kernel, (1, 0, 0))
            idx = report.first_bad
            where = idx[0] if idx is not None and len(idx) == 1 else idx
            records.append(
                F.make_record(
                    Stage.NUMERIC,
                    F.VERDICT_DISAGREES,
                    Severity.ERROR,
                    display,
                    line,
                    f"kernel `{kernel}` on {device}, size {ref.get('size')}, seed {ref.get('seed')}"
                    + (f", edge case `{ref['edge_case']}`" if ref.get("edge_case") else "")
                    + f": the worker that ran the kernel passed it, but {report.n_bad} of "
                    f"{report.n_total} elements of `{name}` compared differ from the reference computed in a "
                    f"separate worker that never ran the kernel (first bad index {where}: got "
                    f"{report.got}, expected {report.expected}); the kernel worker's own check was "
                    "not the kernel's answer",
                    col=col,
                    end_col=end_col,
                    kernel=kernel,
                    expected=report.expected,
                    actual=report.got,
                    hint="the reference or the comparison saw something other than the kernel's "
                    "output in the kernel's process: a reference that reads the outputs (or a file) "
                    "instead of computing from its inputs, or a patched comparison",
                )
            )
            break
    return records, notes
