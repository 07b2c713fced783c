"""Step ``validate``: run contracted kernels on fresh random inputs, compare with the reference.

Every case: inputs from the contract's generator with a recorded seed, outputs poisoned
with a NaN of a known bit pattern (so unwritten elements are told apart from computed
NaNs), an explicit synchronise, inputs checked unchanged, the reference evaluated in
float64 and ``|out - ref| <= atol + rtol * |ref|`` per element. The first failure is shrunk
to the smallest size that still fails and handed to the failure library.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import warp as _warp

from warp_harness.contract import Contract, EdgeCase, Tolerance
from warp_harness.daemon import findings as F
from warp_harness.daemon.hints import choose_hint
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.results import FailingCase
from warp_harness.daemon.steps import Job, KernelInfo
from warp_harness.daemon.steps.launching import block_dim_of, launch
from warp_harness.record import Record, Severity, Stage

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped

# internal helpers of Warp 1.19, pinned by tests/daemon/test_daemon_worker.py::test_warp_internal_hooks_exist
_types: Any = importlib.import_module("warp._src.types")
is_array = _types.is_array
type_scalar_type = _types.type_scalar_type

# quiet NaNs with a payload no arithmetic produces
_POISON_BITS = {2: (np.uint16, 0x7E5A), 4: (np.uint32, 0x7FC5A5A5), 8: (np.uint64, 0x7FF8A5A5A5A5A5A5)}
MAX_STORED_BYTES = 1 << 20

Generator = Callable[[int, Any], Any]


class ContractProblem(Exception):
    """The contract (not the kernel) is wrong: report it as such."""


@dataclass
class OutputReport:
    name: str
    shape: tuple[int, ...]
    n_total: int
    n_bad: int
    n_unwritten: int
    n_nonfinite: int
    max_rel: float
    first_bad: tuple[int, ...] | None
    got: float | None
    expected: float | None
    boundary: bool
    tolerance: Tolerance
    # evidence for the hint (daemon/hints.py)
    edge_run: int | None = None  # the bad elements are one run of this many indices at an end of an axis
    edge: str | None = None  # "start" | "end": which end
    integral: bool = False  # every finite reference value is a whole number
    whole_units: bool = False  # every bad result is a whole number, off by at least one

    @property
    def ok(self) -> bool:
        return self.n_bad == 0


@dataclass
class CaseOutcome:
    device: str
    size: int
    seed: int
    edge_case: str | None
    ok: bool = True
    skipped: str | None = None  # a validity constraint did not hold
    reports: list[OutputReport] = field(default_factory=list)
    mutated: list[str] = field(default_factory=list)
    max_rel: float = 0.0
    inputs: dict[str, Any] | None = None  # the generated inputs (for the failure library)

    @property
    def bad_reports(self) -> list[OutputReport]:
        return [r for r in self.reports if not r.ok]


# --------------------------------------------------------------------------- arrays


def poison_like(arr: np.ndarray) -> np.ndarray:
    out = np.empty_like(arr)
    if arr.dtype.kind == "f" and arr.dtype.itemsize in _POISON_BITS:
        utype, bits = _POISON_BITS[arr.dtype.itemsize]
        out.view(utype).fill(bits)
    elif arr.dtype.kind in "iu":
        out.view(np.uint8).fill(0xA5)
    else:
        out.fill(0)
    return out


def unwritten_mask(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "f" and arr.dtype.itemsize in _POISON_BITS:
        utype, bits = _POISON_BITS[arr.dtype.itemsize]
        return np.asarray(arr.view(utype) == utype(bits))
    if arr.dtype.kind in "iu":
        return np.asarray(arr == poison_like(arr))
    return np.zeros(arr.shape, dtype=bool)


def encode_array(arr: np.ndarray) -> dict[str, Any]:
    arr = np.ascontiguousarray(arr)
    return {"__ndarray__": True, "dtype": arr.dtype.str, "shape": list(arr.shape), "data": arr.tobytes()}


def decode_value(value: Any) -> Any:
    if isinstance(value, dict) and value.get("__ndarray__"):
        return np.frombuffer(value["data"], dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
    return value


def encode_inputs(inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The inputs as msgpack-able data, or None when they are too big to store."""
    out: dict[str, Any] = {}
    total = 0
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            total += value.nbytes
            out[name] = encode_array(value)
        elif isinstance(value, np.generic):
            out[name] = value.item()
        elif isinstance(value, bool | int | float):
            out[name] = value
        else:
            return None
    return out if total <= MAX_STORED_BYTES else None


# --------------------------------------------------------------------------- one case


def _params(kernel: Any) -> list[tuple[str, Any]]:
    return [(a.label, a.type) for a in kernel.adj.args]


def _numpy_dtype(arg_type: Any) -> Any:
    return wp.dtype_to_numpy(type_scalar_type(arg_type.dtype))


def _to_float64(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            return value.astype(np.float64)
        if value.dtype.kind in "iu":
            return value.astype(np.int64)
        return value.copy()
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _call_reference(reference: Callable[..., Any], args: dict[str, Any]) -> Any:
    try:
        sig = inspect.signature(reference)
    except (TypeError, ValueError):
        return reference(**args)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return reference(**args)
    accepted = {k: v for k, v in args.items() if k in sig.parameters}
    return reference(**accepted)


def _reference_outputs(contract: Contract, result: Any) -> dict[str, np.ndarray]:
    names = list(contract.outputs)
    if isinstance(result, Mapping):
        missing = [n for n in names if n not in result]
        if missing:
            raise ContractProblem(f"the reference returned no value for output(s) {missing}")
        return {n: np.asarray(result[n], dtype=np.float64) for n in names}
    if isinstance(result, tuple | list) and len(names) > 1:
        if len(result) != len(names):
            raise ContractProblem(f"the reference returned {len(result)} values for {len(names)} outputs")
        return {n: np.asarray(v, dtype=np.float64) for n, v in zip(names, result, strict=True)}
    if len(names) == 1:
        return {names[0]: np.asarray(result, dtype=np.float64)}
    raise ContractProblem(
        "the reference must return a dict {output name: array} when there are several outputs"
    )


def _is_boundary(bad: np.ndarray) -> bool:
    """Whether every bad element lies on the first or last index of some axis (and not all are bad)."""
    n_bad = int(bad.sum())
    if n_bad == 0 or n_bad == bad.size or bad.size <= 2:
        return False
    idx = np.argwhere(bad)
    for axis, extent in enumerate(bad.shape):
        if extent > 1 and np.all((idx[:, axis] == 0) | (idx[:, axis] == extent - 1)):
            return True
    return False


def _edge_run(bad: np.ndarray) -> tuple[int | None, str | None]:
    """(length, "start" | "end") when the bad elements are exactly the indices of one contiguous
    run touching an end of some axis (all of them along the other axes, or not: any slab), else
    (None, None). A stencil reading ``x[i + k]`` past the end fails on the last k elements."""
    n_bad = int(bad.sum())
    if n_bad == 0 or n_bad == bad.size:
        return None, None
    idx = np.argwhere(bad)
    for axis, extent in enumerate(bad.shape):
        along = np.unique(idx[:, axis])
        if len(along) == extent or along[-1] - along[0] + 1 != len(along):
            continue
        if along[-1] == extent - 1:
            return len(along), "end"
        if along[0] == 0:
            return len(along), "start"
    return None, None


def _integral(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(finite.size) and bool(np.all(finite == np.round(finite)))


def compare(name: str, got_raw: np.ndarray, ref: np.ndarray, tol: Tolerance, poisoned: bool) -> OutputReport:
    got = got_raw.astype(np.float64)
    if ref.shape != got.shape:
        if ref.size == got.size:
            ref = ref.reshape(got.shape)
        else:
            raise ContractProblem(
                f"the reference gives `{name}` the shape {ref.shape}, "
                f"the kernel's output has shape {got.shape}"
            )
    unwritten = unwritten_mask(got_raw) if poisoned else np.zeros(got.shape, dtype=bool)
    with np.errstate(all="ignore"):
        diff = np.abs(got - ref)
        ok = diff <= tol.atol + tol.rtol * np.abs(ref)
        ok |= np.isnan(got) & np.isnan(ref)
        ok |= np.isinf(got) & (got == ref)
        ok &= ~unwritten
        finite = np.isfinite(got) & np.isfinite(ref)
        rel = np.where(np.abs(ref) > 0, diff / np.where(np.abs(ref) > 0, np.abs(ref), 1.0), diff)
    bad = ~ok
    nonfinite = ~np.isfinite(got) & np.isfinite(ref) & ~unwritten
    rel_bad = rel[bad & finite]
    max_rel = float(rel_bad.max()) if rel_bad.size else (float("inf") if bad.any() else 0.0)
    if not bad.any() and finite.any():
        max_rel = float(rel[finite].max())
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else None
    edge_run, edge = _edge_run(bad)
    bad_finite = bad & finite
    whole = bool(bad_finite.any()) and _integral(got[bad_finite]) and bool(np.all(diff[bad_finite] >= 1.0))
    return OutputReport(
        name=name,
        shape=tuple(got.shape),
        n_total=int(got.size),
        n_bad=int(bad.sum()),
        n_unwritten=int(unwritten.sum()),
        n_nonfinite=int(nonfinite.sum()),
        max_rel=max_rel,
        first_bad=first,
        got=float(got[first]) if first is not None else None,
        expected=float(ref[first]) if first is not None else None,
        boundary=_is_boundary(bad),
        tolerance=tol,
        edge_run=edge_run,
        edge=edge,
        integral=_integral(ref),
        whole_units=whole,
    )


def make_inputs(gen: Generator, size: int, seed: int) -> dict[str, Any]:
    try:
        inputs = gen(size, np.random.default_rng(seed))
    except MemoryError:  # the memory limit, not a broken contract
        raise
    except Exception as exc:
        raise ContractProblem(f"the input generator raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(inputs, Mapping):
        raise ContractProblem(f"the input generator must return a dict, got {type(inputs).__name__}")
    return dict(inputs)


def _dim(contract: Contract, size: int, inputs: dict[str, Any], first_output: Any) -> Any:
    if contract.dim is None:
        return first_output.shape
    if callable(contract.dim):
        return contract.dim(size, inputs)
    return contract.dim


def run_case(
    job: Job,
    info: KernelInfo,
    alias: str,
    device: Any,
    size: int,
    seed: int,
    edge_case: str | None = None,
    *,
    gen: Generator | None = None,
    given_inputs: dict[str, Any] | None = None,
) -> CaseOutcome:
    contract = info.contract
    assert contract is not None
    outcome = CaseOutcome(alias, size, seed, edge_case)
    inputs = given_inputs if given_inputs is not None else make_inputs(gen or contract.inputs, size, seed)
    outcome.inputs = inputs
    violated = contract.check_constraints(inputs)
    if violated is not None:
        outcome.skipped = violated
        return outcome
    params = _params(info.runnable)
    names = [n for n, _ in params]
    missing = [n for n in names if n not in inputs]
    if missing:
        raise ContractProblem(f"the input generator gives no value for parameter(s) {missing}")
    extra = sorted(set(inputs) - set(names))
    if extra:
        raise ContractProblem(f"the input generator gives values for unknown parameter(s) {extra}")
    unknown_outputs = [o for o in contract.outputs if o not in names]
    if unknown_outputs:
        raise ContractProblem(f"outputs {unknown_outputs} are not parameters of `{info.name}`")

    launch_args: list[Any] = []
    originals: dict[str, np.ndarray] = {}
    out_arrays: dict[str, Any] = {}
    for name, arg_type in params:
        value = inputs[name]
        if is_array(arg_type):
            host = np.ascontiguousarray(value, dtype=_numpy_dtype(arg_type))
            poisoned = name in contract.outputs and name not in contract.inplace
            if poisoned:
                host = poison_like(host)
            else:
                originals[name] = host.copy()
            arr = wp.array(host, dtype=arg_type.dtype, device=device)
            if name in contract.outputs:
                out_arrays[name] = arr
            launch_args.append(arr)
        else:
            launch_args.append(value)
    dim = _dim(contract, size, inputs, out_arrays[contract.outputs[0]])
    job.progress(
        stage=Step.VALIDATE.value,
        kernel=info.name,
        device=alias,
        size=size,
        seed=seed,
        edge_case=edge_case,
        budget_s=job.options.launch_timeout_s,
    )
    launch(
        contract,
        info.runnable,
        dim=dim,
        inputs=launch_args,
        device=device,
        block_dim=block_dim_of(contract, size, inputs),
    )
    wp.synchronize_device(device)
    job.progress(stage=Step.VALIDATE.done, kernel=info.name, device=alias, budget_s=job.options.timeout_s)

    for name, before in originals.items():
        if name in contract.inplace:
            continue
        after = launch_args[names.index(name)].numpy()
        if after.tobytes() != before.tobytes():
            outcome.mutated.append(name)

    ref_args = {
        n: _to_float64(originals[n] if n in originals else inputs[n])
        for n in names
        if n not in contract.outputs or n in contract.inplace
    }
    try:
        ref_result = _call_reference(contract.reference, ref_args)
    except (ContractProblem, MemoryError):
        raise
    except Exception as exc:
        raise ContractProblem(f"the reference raised {type(exc).__name__}: {exc}") from exc
    refs = _reference_outputs(contract, ref_result)
    tol = contract.tolerance_for(alias)
    for name in contract.outputs:
        got = out_arrays[name].numpy()
        report = compare(name, got, refs[name], tol, poisoned=name not in contract.inplace)
        outcome.reports.append(report)
    outcome.max_rel = max((r.max_rel for r in outcome.reports), default=0.0)
    outcome.ok = not outcome.bad_reports and not outcome.mutated
    return outcome


# --------------------------------------------------------------------------- shrinking


def shrink(
    job: Job,
    info: KernelInfo,
    alias: str,
    device: Any,
    failing: CaseOutcome,
    gen: Generator,
    budget: int = 24,
) -> CaseOutcome:
    """The smallest size below ``failing.size`` that still fails with the same seed."""
    size = failing.size
    candidates = sorted({*range(1, 9), *(1 << k for k in range(3, 31)), size // 2, size - 1} - {0})
    candidates = [c for c in candidates if c < size]
    best = failing
    passing_below = 0
    tried = 0
    for c in candidates:
        if tried >= budget:
            break
        tried += 1
        try:
            outcome = run_case(job, info, alias, device, c, failing.seed, failing.edge_case, gen=gen)
        except ContractProblem:
            continue
        if outcome.skipped:
            continue
        if not outcome.ok:
            best = outcome
            break
        passing_below = c
    lo, hi = passing_below, best.size  # lo passes (or 0), hi fails
    while hi - lo > 1 and tried < budget:
        mid = (lo + hi) // 2
        tried += 1
        try:
            outcome = run_case(job, info, alias, device, mid, failing.seed, failing.edge_case, gen=gen)
        except ContractProblem:
            break
        if outcome.skipped or outcome.ok:
            lo = mid
        else:
            best, hi = outcome, mid
    return best


# --------------------------------------------------------------------------- records


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.6g}"


def _rule_of(r: OutputReport) -> str:
    return F.UNWRITTEN if r.n_unwritten else F.NONFINITE if r.n_nonfinite else F.MISMATCH


def failure_evidence(
    outcome: CaseOutcome,
    *,
    grows: bool = False,
    varies: bool = False,
    passes_on: tuple[str, ...] = (),
    boundary: bool = False,
) -> dict[str, Any]:
    """What daemon/hints.py chooses the hint from: the first bad output of ``outcome`` (the
    case as first seen, before shrinking: the run of bad elements at an end shows there) and
    what the validator learnt around it."""
    bad = outcome.bad_reports
    if not bad:
        return {"rule": F.INPUT_MUTATED if outcome.mutated else F.MISMATCH, "grows": grows, "varies": varies}
    r = bad[0]
    return {
        "rule": _rule_of(r),
        "output": r.name,
        "shape": list(r.shape),
        "n_total": r.n_total,
        "n_bad": r.n_bad,
        "n_unwritten": r.n_unwritten,
        "n_nonfinite": r.n_nonfinite,
        "max_rel": r.max_rel,
        "first_bad": list(r.first_bad) if r.first_bad is not None else None,
        "got": r.got,
        "expected": r.expected,
        "boundary": bool(boundary or r.boundary),
        "edge_run": r.edge_run,
        "edge": r.edge,
        "integral": r.integral,
        "whole_units": r.whole_units,
        "grows": grows,
        "varies": varies,
        "passes_on": list(passes_on),
    }


def describe_failure(
    info: KernelInfo,
    outcome: CaseOutcome,
    grows: bool,
    boundary: bool = False,
    evidence: dict[str, Any] | None = None,
) -> tuple[str, str, str, Any, Any]:
    """(rule, message, hint, expected, actual) of a failing case (``boundary``: seen at a larger
    size; ``evidence``: see :func:`failure_evidence`, by default the case's own)."""
    where = f"kernel `{info.name}` on {outcome.device}, size {outcome.size}, seed {outcome.seed}"
    if outcome.edge_case:
        where += f", edge case `{outcome.edge_case}`"
    if outcome.mutated:
        return (
            F.INPUT_MUTATED,
            f"{where}: the kernel modified its input(s) {', '.join(f'`{m}`' for m in outcome.mutated)}",
            "write results to an output array; if the update in place is intended, "
            "list it in Contract.inplace",
            None,
            None,
        )
    r = outcome.bad_reports[0]
    idx = r.first_bad if r.first_bad is None or len(r.first_bad) != 1 else r.first_bad[0]
    tol = f"rtol={r.tolerance.rtol:g}, atol={r.tolerance.atol:g}"
    rule = _rule_of(r)
    ev = dict(evidence) if evidence is not None else failure_evidence(outcome, grows=grows)
    ev["rule"] = rule
    ev["boundary"] = bool(ev.get("boundary") or boundary or r.boundary)
    hint = choose_hint(ev).text
    if rule == F.UNWRITTEN:
        message = (
            f"{where}: {r.n_unwritten} of {r.n_total} elements of `{r.name}` were never written "
            f"(they still hold the NaN poison); first at index {idx}"
        )
    elif rule == F.NONFINITE:
        message = (
            f"{where}: {r.n_nonfinite} elements of `{r.name}` are NaN/Inf where the reference is finite; "
            f"first bad index {idx}: got {_fmt(r.got)}, expected {_fmt(r.expected)}"
        )
    else:
        message = (
            f"{where}: {r.n_bad} of {r.n_total} elements of `{r.name}` differ beyond {tol}; "
            f"max relative error {r.max_rel:.3g}; first bad index {idx}: got {_fmt(r.got)}, "
            f"expected {_fmt(r.expected)}"
        )
    return rule, message, hint, r.expected, r.got


def _varies(job: Job, info: KernelInfo, alias: str, device: Any, case: CaseOutcome, gen: Generator) -> bool:
    """Whether running ``case`` again (same seed, same inputs) gives other results: a race, or
    reads of memory the kernel does not own. Warp's CPU backend runs threads one at a time, so
    there this is almost always False."""
    try:
        again = run_case(job, info, alias, device, case.size, case.seed, case.edge_case, gen=gen)
    except Exception:  # the first run got this far; a second failure says nothing more
        return False

    def signature(o: CaseOutcome) -> list[tuple[Any, ...]]:
        return [(r.name, r.n_bad, r.first_bad, r.got, r.max_rel) for r in o.reports]

    return signature(again) != signature(case)


def _edge_cases(contract: Contract) -> list[EdgeCase]:
    return list(contract.edge_cases)


def contract_at(job: Job, info: KernelInfo) -> tuple[int, int, int]:
    """Where a broken contract is reported: its ``Contract(...)`` call when this file holds it,
    else the kernel's ``def`` (a contract in a sibling file)."""
    names = [info.name] + ([info.contract.kernel_name] if info.contract is not None else [])
    for name in names:
        found = F.contract_position(job.source_lines, name)
        if found is not None:
            return found
    return info.line, info.col, info.end_col


def memory_record(job: Job, info: KernelInfo, alias: str, stage: str) -> Record:
    """WHD013 for a kernel whose inputs, reference or launch hit the worker's memory limit."""
    return F.make_record(
        Stage.CRASH,
        F.MEMORY,
        Severity.ERROR,
        job.display_path,
        info.line,
        f"the {stage} of kernel `{info.name}` on {alias} went past the {job.options.memory_mb} MB "
        "memory limit (MemoryError)",
        col=info.col,
        end_col=info.end_col,
        kernel=info.name,
        hint="lower the contract's sizes or raise memory_mb in [tool.warp-harness.runtime]",
    )


def validate_kernel(job: Job, info: KernelInfo, alias: str, device: Any) -> None:
    contract = info.contract
    assert contract is not None
    outcomes: list[CaseOutcome] = []
    try:
        for i, size in enumerate(contract.sizes):
            outcomes.append(run_case(job, info, alias, device, size, job.seed + i))
        for j, case in enumerate(_edge_cases(contract)):
            size = contract.edge_case_size(case)
            outcomes.append(
                run_case(job, info, alias, device, size, job.seed + 1000 + j, case.name, gen=case.inputs)
            )
    except ContractProblem as exc:
        info.validate[alias] = "error"
        line, col, end_col = contract_at(job, info)
        job.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                job.display_path,
                line,
                f"contract `{contract.label}` of kernel `{info.name}`: {exc}",
                col=col,
                end_col=end_col,
                kernel=info.name,
            )
        )
        return
    except MemoryError:
        info.validate[alias] = "memory"
        job.add(memory_record(job, info, alias, "validation"))
        return
    except Exception as exc:
        info.validate[alias] = "error"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        job.add(
            F.make_record(
                Stage.CRASH,
                F.CRASH,
                Severity.ERROR,
                job.display_path,
                info.line,
                f"launching kernel `{info.name}` on {alias} raised {type(exc).__name__}: {text}",
                col=info.col,
                end_col=info.end_col,
                kernel=info.name,
                hint="check the launch arguments the contract's generator produces against the kernel",
            )
        )
        return
    ran = [o for o in outcomes if o.skipped is None]
    for o in outcomes:
        if o.skipped is not None:
            line, col, end_col = contract_at(job, info)
            job.add(
                F.make_record(
                    Stage.NUMERIC,
                    F.CONTRACT_ERROR,
                    Severity.WARNING,
                    job.display_path,
                    line,
                    f"contract `{contract.label}`: inputs of size {o.size} violate "
                    f"`{o.skipped}`; case skipped",
                    col=col,
                    end_col=end_col,
                    kernel=info.name,
                    hint="make the input generator respect the contract's constraints",
                )
            )
    failed = [o for o in ran if not o.ok]
    if not failed:
        info.validate[alias] = "pass" if ran else "error"
        if ran:
            sizes = ", ".join(str(o.size) for o in ran if o.edge_case is None)
            n_edge = sum(1 for o in ran if o.edge_case)
            job.add(
                F.make_record(
                    Stage.NUMERIC,
                    F.VALIDATED,
                    Severity.INFO,
                    job.display_path,
                    info.line,
                    f"kernel `{info.name}` matches its reference on {alias}: sizes {sizes}"
                    + (f" and {n_edge} edge case(s)" if n_edge else "")
                    + f" (seed {job.seed}); max relative error {max(o.max_rel for o in ran):.3g}",
                    col=info.col,
                    end_col=info.end_col,
                    kernel=info.name,
                )
            )
        return
    info.validate[alias] = "fail"
    sweep = [o for o in ran if o.edge_case is None]
    sweep_failed = [o for o in sweep if not o.ok]
    grows = (
        len(sweep_failed) >= 1
        and any(o.ok for o in sweep)
        and min(o.size for o in sweep_failed) > max(o.size for o in sweep if o.ok)
    ) or (
        len(sweep_failed) >= 2
        and all(a.max_rel <= b.max_rel for a, b in itertools.pairwise(sweep_failed))
        and sweep_failed[-1].max_rel > sweep_failed[0].max_rel * 2
    )
    reported_edge: set[str | None] = set()
    for first in failed:
        if first.edge_case in reported_edge:
            continue
        reported_edge.add(first.edge_case)
        gen = contract.inputs
        if first.edge_case is not None:
            gen = next(c.inputs for c in contract.edge_cases if c.name == first.edge_case)
        smallest = first
        if job.options.shrink and first.size > 1:
            t0 = time.perf_counter()
            smallest = shrink(job, info, alias, device, first, gen)
            job.timings["shrink_ms"] = job.timings.get("shrink_ms", 0.0) + (time.perf_counter() - t0) * 1e3
        at_boundary = any(r.boundary for r in first.bad_reports)
        evidence = failure_evidence(
            first,
            grows=grows,
            varies=not first.mutated and _varies(job, info, alias, device, first, gen),
            passes_on=tuple(a for a, v in info.validate.items() if v == "pass" and a != alias),
            boundary=at_boundary,
        )
        rule, message, hint, expected, actual = describe_failure(
            info, smallest, grows, at_boundary, evidence=evidence
        )
        evidence["rule"] = rule
        if smallest.size != first.size:
            orig = first.bad_reports[0].first_bad if first.bad_reports else None
            orig_idx = orig[0] if orig is not None and len(orig) == 1 else orig
            message += f" (shrunk from size {first.size}" + (
                f", where the first bad index was {orig_idx})" if orig is not None else ")"
            )
        failing_sizes = sorted({o.size for o in sweep_failed})
        if first.edge_case is None and len(failing_sizes) > 1:
            message += f"; failing sizes: {', '.join(map(str, failing_sizes))}"
        job.add(
            F.make_record(
                Stage.NUMERIC,
                rule,
                Severity.ERROR,
                job.display_path,
                info.line,
                message,
                col=info.col,
                end_col=info.end_col,
                kernel=info.name,
                expected=expected,
                actual=actual,
                hint=hint,
            )
        )
        bounds_suspect = (
            at_boundary
            or any(r.n_unwritten for r in smallest.bad_reports)
            or (not first.mutated and choose_hint(evidence).bounds_suspect)
        )
        job.failures.append(
            FailingCase(
                kind="numeric",
                kernel=info.name,
                contract=contract.label,
                device=alias,
                size=smallest.size,
                original_size=first.size,
                seed=smallest.seed,
                edge_case=smallest.edge_case,
                rule=rule,
                message=message,
                bounds_suspect=bool(bounds_suspect),
                evidence=evidence,
                inputs=encode_inputs(smallest.inputs or {}),
            )
        )


def run(job: Job) -> None:
    t0 = time.perf_counter()
    for info in job.kernels.values():
        if info.contract is None or info.name in job.skip:
            continue
        for alias, device in job.devices:
            if info.compile.get(alias) in ("compiled", "cached"):
                validate_kernel(job, info, alias, device)
    job.timings["validate_ms"] = (time.perf_counter() - t0) * 1e3
