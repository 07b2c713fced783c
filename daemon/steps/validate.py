"""Step ``validate``: run contracted kernels on fresh random inputs, compare with the reference.

Every case: inputs from the contract's generator with a recorded seed, outputs poisoned
with a NaN of a known bit pattern (so unwritten elements are told apart from computed
NaNs), an explicit synchronise, inputs checked unchanged, the reference evaluated in
float64 and ``|out - ref| <= atol + rtol * |ref|`` per element. The first failure is shrunk
to the smallest size that still fails and handed to the failure library.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import itertools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import warp as _warp

from warp_harness.contract import Contract, EdgeCase
from warp_harness.daemon import findings as F
from warp_harness.daemon.comparison import (  # noqa: F401 - tests use them from here
    SAMPLE_ELEMENTS,
    ContractProblem,
    OutputReport,
    compare,
    decode_value,
    encode_array,
    poison_like,
    sample_indices,
    sampled,
    unwritten_mask,
)
from warp_harness.daemon.hints import choose_hint
from warp_harness.daemon.integrity import TRUSTED, from_snapshot, snapshot_bytes, to_numpy
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.results import FailingCase
from warp_harness.daemon.steps import KernelInfo, StepContext, StepOutcome, device_check
from warp_harness.daemon.steps.launching import block_dim_of, end_if_context_lost, launch
from warp_harness.record import Record, Severity, Stage

if TYPE_CHECKING:
    from warp_harness.daemon.steps.timed_digest import PendingDigest

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped

# internal helpers of Warp 1.19, pinned by tests/daemon/test_daemon_worker.py::test_warp_internal_hooks_exist
_types: Any = importlib.import_module("warp._src.types")
is_array = _types.is_array
type_scalar_type = _types.type_scalar_type

MAX_STORED_BYTES = 1 << 20

Generator = Callable[[int, Any], Any]


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
    # the outputs as read back right after the launch (for the verdict worker's cross-check)
    outputs: dict[str, tuple[bytes, Any, tuple[int, ...]]] = field(default_factory=dict)
    input_digest: str = ""  # what was launched: equal to the verdict worker's regenerated inputs
    refs: dict[str, np.ndarray] = field(default_factory=dict)  # the reference's outputs
    # the outputs of the separate launch whose outputs start as poison (unwritten elements)
    poison_outputs: dict[str, tuple[bytes, Any, tuple[int, ...]]] = field(default_factory=dict)
    drawn: bool = False  # a size drawn from the seed, not one the contract declares

    @property
    def bad_reports(self) -> list[OutputReport]:
        return [r for r in self.reports if not r.ok]


# --------------------------------------------------------------------------- arrays


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


def _call_reference(reference: Callable[..., Any], args: Mapping[str, Any]) -> Any:
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


def reference_outputs(
    contract: Contract, names: list[str], originals: Mapping[str, np.ndarray], inputs: Mapping[str, Any]
) -> dict[str, np.ndarray]:
    """The contract's reference on float64 copies of the inputs (``originals``: the values
    launched, for arrays), by output name."""
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
    return _reference_outputs(contract, ref_result)


def input_digest(
    params: list[tuple[str, Any]], originals: Mapping[str, np.ndarray], inputs: Mapping[str, Any]
) -> str:
    """SHA-256 of what a case launches (the input arrays as converted, the scalars): the
    kernel worker and the verdict worker compare it to know they mean the same inputs."""
    h = hashlib.sha256()
    for name, arg_type in params:
        h.update(name.encode())
        if name in originals:
            h.update(originals[name].dtype.str.encode())
            h.update(_raw_bytes(originals[name]))
        elif not is_array(arg_type):
            h.update(repr(inputs.get(name)).encode())
    return h.hexdigest()


DIGEST_CHUNK_BYTES = 64 << 20  # a device array larger than this is read back in pieces to be hashed


def streamed_input_digest(
    params: list[tuple[str, Any]], args: list[Any], outputs: Sequence[str], scalars: Mapping[str, Any]
) -> str:
    """``input_digest`` of a launch's arguments as they are (Warp arrays on any device), reading
    each array back in pieces of at most DIGEST_CHUNK_BYTES along its first axis: the same
    digest as of the whole arrays, without a host copy of a 1 GiB input."""
    h = hashlib.sha256()
    for j, (name, arg_type) in enumerate(params):
        h.update(name.encode())
        if is_array(arg_type) and name not in outputs:
            array = args[j]
            rows = int(array.shape[0]) if array.shape else 1
            per_row = max(1, int(array.capacity) // max(rows, 1))
            step = max(1, DIGEST_CHUNK_BYTES // per_row)
            for start in range(0, rows, step) if rows > step else [0]:
                piece = to_numpy(array[start : min(start + step, rows)] if rows > step else array)
                if start == 0:
                    h.update(piece.dtype.str.encode())
                h.update(_raw_bytes(piece))
        elif not is_array(arg_type):
            h.update(repr(scalars.get(name)).encode())
    return h.hexdigest()


def _raw_bytes(array: np.ndarray) -> Any:
    """``array.tobytes()`` without the copy where the array's memory can be read as it is
    (100,000 float32 inputs: 0.4 MB copied twice per case in each worker, before)."""
    try:
        contiguous: Any = np.ascontiguousarray(array)
        return memoryview(contiguous).cast("B")
    except (TypeError, ValueError):  # object arrays and other dtypes a buffer cannot show
        return array.tobytes()


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
    ctx: StepContext,
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

    # The checked launch starts from the memory the benchmark's launches start from: every
    # argument, outputs included, as the generator made it. Unwritten outputs are found on a
    # separate launch whose outputs start as poison, so the poison never marks a checked launch.
    launch_args: list[Any] = []
    poison_args: list[Any] = []
    originals: dict[str, np.ndarray] = {}
    out_arrays: dict[str, Any] = {}
    poison_arrays: dict[str, Any] = {}
    for name, arg_type in params:
        value = inputs[name]
        if is_array(arg_type):
            host = np.ascontiguousarray(value, dtype=_numpy_dtype(arg_type))
            poisoned = name in contract.outputs and name not in contract.inplace
            if not poisoned:
                originals[name] = host.copy()
            arr = wp.array(host, dtype=arg_type.dtype, device=device)
            launch_args.append(arr)
            if name in contract.outputs:
                out_arrays[name] = arr
            if poisoned:
                poison_arrays[name] = wp.array(poison_like(host), dtype=arg_type.dtype, device=device)
                poison_args.append(poison_arrays[name])
            elif name in contract.outputs:  # in place: the checked launch changes it, start afresh
                poison_args.append(wp.array(originals[name], dtype=arg_type.dtype, device=device))
            else:  # a pure input: the same buffer (a launch that changed it fails the case anyway)
                poison_args.append(arr)
        else:
            launch_args.append(value)
            poison_args.append(value)
    dim = _dim(contract, size, inputs, out_arrays[contract.outputs[0]])
    block_dim = block_dim_of(contract, size, inputs)
    got_snaps = _checked_launch(
        ctx, info, alias, device, size, seed, edge_case, launch_args, out_arrays, dim, block_dim
    )
    poison_snaps: dict[str, tuple[bytes, Any, tuple[int, ...]]] = {}
    if poison_arrays:
        poison_snaps = _checked_launch(
            ctx, info, alias, device, size, seed, edge_case, poison_args, poison_arrays, dim, block_dim
        )
    ctx.progress(stage=Step.VALIDATE.done, kernel=info.name, device=alias, budget_s=ctx.options.timeout_s)

    for name, before in originals.items():
        if name in contract.inplace:
            continue
        after = to_numpy(launch_args[names.index(name)])
        if after.tobytes() != before.tobytes():
            outcome.mutated.append(name)

    outcome.outputs = got_snaps
    outcome.poison_outputs = poison_snaps
    outcome.input_digest = input_digest(params, originals, inputs)
    refs = reference_outputs(contract, names, originals, inputs)
    outcome.refs = refs
    tol = contract.tolerance_for(alias)
    for name in contract.outputs:
        report = compare(name, from_snapshot(got_snaps[name]), refs[name], tol, poisoned=False)
        if name in poison_snaps:
            unwritten = compare(name, from_snapshot(poison_snaps[name]), refs[name], tol, poisoned=True)
            if not unwritten.ok:  # what the poisoned launch shows (unwritten elements) goes first
                report = unwritten
        outcome.reports.append(report)
    outcome.max_rel = max((r.max_rel for r in outcome.reports), default=0.0)
    outcome.ok = not outcome.bad_reports and not outcome.mutated
    return outcome


def _checked_launch(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    device: Any,
    size: int,
    seed: int,
    edge_case: str | None,
    args: list[Any],
    outputs: Mapping[str, Any],
    dim: Any,
    block_dim: int | None,
) -> dict[str, tuple[bytes, Any, tuple[int, ...]]]:
    """One launch of the case, synchronised; the outputs as immutable bytes right after it,
    before any other workspace code (the reference) runs: a reference that finds the output
    arrays on the heap cannot write the answer in."""
    contract = info.contract
    assert contract is not None
    ctx.progress(
        stage=Step.VALIDATE.value,
        kernel=info.name,
        device=alias,
        size=size,
        seed=seed,
        edge_case=edge_case,
        budget_s=ctx.options.launch_timeout_s,
    )
    launch(contract, info.runnable, dim=dim, inputs=args, device=device, block_dim=block_dim)
    TRUSTED.synchronize_device(device)
    return {name: snapshot_bytes(arr) for name, arr in outputs.items()}


# --------------------------------------------------------------------------- shrinking


def shrink(
    ctx: StepContext,
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
            outcome = run_case(ctx, info, alias, device, c, failing.seed, failing.edge_case, gen=gen)
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
            outcome = run_case(ctx, info, alias, device, mid, failing.seed, failing.edge_case, gen=gen)
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


def _varies(
    ctx: StepContext, info: KernelInfo, alias: str, device: Any, case: CaseOutcome, gen: Generator
) -> bool:
    """Whether running ``case`` again (same seed, same inputs) gives other results: a race, or
    reads of memory the kernel does not own. Warp's CPU backend runs threads one at a time, so
    there this is almost always False."""
    try:
        again = run_case(ctx, info, alias, device, case.size, case.seed, case.edge_case, gen=gen)
    except Exception:  # the first run got this far; a second failure says nothing more
        return False

    def signature(o: CaseOutcome) -> list[tuple[Any, ...]]:
        return [(r.name, r.n_bad, r.first_bad, r.got, r.max_rel) for r in o.reports]

    return signature(again) != signature(case)


def _edge_cases(contract: Contract) -> list[EdgeCase]:
    return list(contract.edge_cases)


def contract_at(ctx: StepContext, info: KernelInfo) -> tuple[int, int, int]:
    """Where a broken contract is reported: its ``Contract(...)`` call when this file holds it,
    else the kernel's ``def`` (a contract in a sibling file)."""
    names = [info.name] + ([info.contract.kernel_name] if info.contract is not None else [])
    for name in names:
        found = F.contract_position(ctx.source_lines, name)
        if found is not None:
            return found
    return info.line, info.col, info.end_col


def memory_record(ctx: StepContext, info: KernelInfo, alias: str, stage: str) -> Record:
    """WHD013 for a kernel whose inputs, reference or launch hit the worker's memory limit."""
    return F.make_record(
        Stage.CRASH,
        F.MEMORY,
        Severity.ERROR,
        ctx.display_path,
        info.line,
        f"the {stage} of kernel `{info.name}` on {alias} went past the {ctx.options.memory_mb} MB "
        "memory limit (MemoryError)",
        col=info.col,
        end_col=info.end_col,
        kernel=info.name,
        hint="lower the contract's sizes or raise memory_mb in [tool.warp-harness.runtime]",
    )


DRAWN_SEED = 2000  # the drawn sizes' inputs: ctx.seed + this + k
EDGE_SEED = 1000  # the edge cases' inputs: ctx.seed + this + j
TIMED_SEED = 5000  # the benchmark's input sets: ctx.seed + this + k (steps/bench.py)
REVALIDATE_SEED = 7000  # fresh inputs for the check after the timed loop: ctx.seed + this + set


def drawn_sizes(sizes: tuple[int, ...] | list[int], seed: int) -> list[int]:
    """Sizes the contract does not declare, drawn from the job's seed: one next to a declared
    size (a step below or above) and one between two declared sizes. The step is the greatest
    common divisor of the declared sizes: a contract whose sizes are all multiples of 64 (a
    kernel that works in blocks of 64) is not asked for 63. A kernel right only at the sizes its
    contract lists fails at these."""
    declared = sorted(set(sizes))
    step = math.gcd(*declared)
    rng = np.random.default_rng([seed & 0xFFFFFFFF, 0x517E5])
    out: list[int] = []
    around = declared[int(rng.integers(len(declared)))]
    sign = 1 if rng.integers(2) else -1
    for candidate in (around + sign * step, around - sign * step):
        if candidate >= 1 and candidate not in declared:
            out.append(candidate)
            break
    gaps = [(a, b) for a, b in itertools.pairwise(declared) if (b - a) // step > 1]
    if gaps:
        lo, hi = gaps[int(rng.integers(len(gaps)))]
        # log-uniform: sizes of every order of magnitude in the gap, most of them cheap
        lo_k, hi_k = lo // step + 1, hi // step - 1
        between = step * int(min(max(round(np.exp(rng.uniform(np.log(lo_k), np.log(hi_k)))), lo_k), hi_k))
        if between in out:  # the neighbour again: the next multiple inside the gap, if any
            between = next((b for b in (between + step, between - step) if lo < b < hi), between)
        if between not in out:
            out.append(between)
    return out


@dataclass(frozen=True)
class PlannedCase:
    """One validation case, as both workers derive it from the contract and the job's seed."""

    size: int
    seed: int
    edge_case: str | None
    gen: Generator
    drawn: bool = False


def planned_cases(contract: Contract, seed: int) -> list[PlannedCase]:
    """Every validation case of a contract: its sizes, the drawn sizes, its edge cases."""
    cases = [PlannedCase(size, seed + i, None, contract.inputs) for i, size in enumerate(contract.sizes)]
    cases += [
        PlannedCase(size, seed + DRAWN_SEED + k, None, contract.inputs, drawn=True)
        for k, size in enumerate(drawn_sizes(list(contract.sizes), seed))
    ]
    cases += [
        PlannedCase(contract.edge_case_size(c), seed + EDGE_SEED + j, c.name, c.inputs)
        for j, c in enumerate(_edge_cases(contract))
    ]
    return cases


def _run_planned(
    ctx: StepContext, info: KernelInfo, alias: str, device: Any, case: PlannedCase
) -> CaseOutcome | None:
    """The case's outcome; None for a drawn size the contract cannot make inputs for (its
    generator raises, or a constraint fails there): a drawn size is an extra, not a promise."""
    gen = case.gen if case.edge_case is not None else None
    if not case.drawn:
        return run_case(ctx, info, alias, device, case.size, case.seed, case.edge_case, gen=gen)
    try:
        outcome = run_case(ctx, info, alias, device, case.size, case.seed, case.edge_case, gen=gen)
    except ContractProblem:
        ctx.notes.setdefault("drawn_skipped", []).append(f"{info.name}:{case.size}")
        return None
    if outcome.skipped is not None:
        ctx.notes.setdefault("drawn_skipped", []).append(f"{info.name}:{case.size}")
        return None
    outcome.drawn = True
    return outcome


def validate_kernel(ctx: StepContext, info: KernelInfo, alias: str, device: Any) -> None:
    contract = info.contract
    assert contract is not None
    outcomes: list[CaseOutcome] = []
    try:
        for case in planned_cases(contract, ctx.seed):
            outcome = _run_planned(ctx, info, alias, device, case)
            if outcome is not None:
                outcomes.append(outcome)
    except ContractProblem as exc:
        ctx.set_verdict(info.name, alias, "error")
        line, col, end_col = contract_at(ctx, info)
        ctx.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                ctx.display_path,
                line,
                f"contract `{contract.label}` of kernel `{info.name}`: {exc}",
                col=col,
                end_col=end_col,
                kernel=info.name,
            )
        )
        return
    except MemoryError:
        ctx.set_verdict(info.name, alias, "memory")
        ctx.add(memory_record(ctx, info, alias, "validation"))
        return
    except Exception as exc:
        end_if_context_lost(exc)  # a GPU fault: the worker ends, as a crash does on the CPU
        ctx.set_verdict(info.name, alias, "error")
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        ctx.add(
            F.make_record(
                Stage.CRASH,
                F.CRASH,
                Severity.ERROR,
                ctx.display_path,
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
            line, col, end_col = contract_at(ctx, info)
            ctx.add(
                F.make_record(
                    Stage.NUMERIC,
                    F.CONTRACT_ERROR,
                    Severity.WARNING,
                    ctx.display_path,
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
        ctx.set_verdict(info.name, alias, "pass" if ran else "error")
        # the benchmark re-checks its buffers after the timed loop on this case (bench.revalidate)
        bench_size = contract.benchmark_size_for(alias)
        at_bench_size = [o for o in ran if o.edge_case is None and o.size == bench_size]
        if at_bench_size:
            ctx.set_validated_case(info.name, alias, at_bench_size[0])
        t0 = time.perf_counter()
        ship_outputs(ctx, info, alias, ran)
        ctx.timings["ship_ms"] = ctx.timings.get("ship_ms", 0.0) + (time.perf_counter() - t0) * 1e3
        declared = [o for o in ran if not o.drawn]  # the record speaks of the contract's cases
        if declared:
            sizes = ", ".join(str(o.size) for o in declared if o.edge_case is None)
            n_edge = sum(1 for o in declared if o.edge_case)
            ctx.add(
                F.make_record(
                    Stage.NUMERIC,
                    F.VALIDATED,
                    Severity.INFO,
                    ctx.display_path,
                    info.line,
                    f"kernel `{info.name}` matches its reference on {alias}: sizes {sizes}"
                    + (f" and {n_edge} edge case(s)" if n_edge else "")
                    + f" (seed {ctx.seed}); max relative error {max(o.max_rel for o in declared):.3g}",
                    col=info.col,
                    end_col=info.end_col,
                    kernel=info.name,
                )
            )
        return
    ctx.set_verdict(info.name, alias, "fail")
    sweep = [o for o in ran if o.edge_case is None and not o.drawn]
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
    for first in sorted(failed, key=lambda o: o.drawn):  # a declared size's failure goes first
        if first.edge_case in reported_edge:
            continue
        reported_edge.add(first.edge_case)
        gen = contract.inputs
        if first.edge_case is not None:
            gen = next(c.inputs for c in contract.edge_cases if c.name == first.edge_case)
        smallest = first
        if ctx.options.shrink and first.size > 1:
            t0 = time.perf_counter()
            smallest = shrink(ctx, info, alias, device, first, gen)
            ctx.timings["shrink_ms"] = ctx.timings.get("shrink_ms", 0.0) + (time.perf_counter() - t0) * 1e3
        at_boundary = any(r.boundary for r in first.bad_reports)
        evidence = failure_evidence(
            first,
            grows=grows,
            varies=not first.mutated and _varies(ctx, info, alias, device, first, gen),
            passes_on=tuple(
                a for a, v in ctx.verdicts_of(info.name).validate.items() if v == "pass" and a != alias
            ),
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
        if first.drawn:
            message += (
                f"; size {first.size} is not one the contract lists: it was drawn from the seed "
                f"around and between its sizes ({', '.join(map(str, contract.sizes))})"
            )
        failing_sizes = sorted({o.size for o in sweep_failed})
        if first.edge_case is None and len(failing_sizes) > 1:
            message += f"; failing sizes: {', '.join(map(str, failing_sizes))}"
        ctx.add(
            F.make_record(
                Stage.NUMERIC,
                rule,
                Severity.ERROR,
                ctx.display_path,
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
        ctx.failures.append(
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


# the most bytes of outputs one job sends to the supervisor for the cross-check
VERDICT_MAX_BYTES = 8 << 20


TIMED_CASE = "@timed"  # the edge-case field of a benchmark set's key
TIMED_SETS = 3  # the benchmark's input sets whose timed outputs are judged (steps/bench.py makes 3)


def _case_key(kernel: str, size: int, seed: int, edge_case: str | None) -> str:
    return f"{kernel}|{size}|{seed}|{edge_case or ''}"


def _encoded(snaps: Mapping[str, tuple[bytes, Any, tuple[int, ...]]], seed: int | None) -> dict[str, Any]:
    return {n: encode_array(sampled(from_snapshot(snap), seed)) for n, snap in snaps.items()}


def _ship(ctx: StepContext, case: dict[str, Any], nbytes: int) -> None:
    if ctx.verdict_bytes + nbytes > VERDICT_MAX_BYTES:  # the supervisor then has no evidence: no pass
        ctx.notes["verdict_not_sent"] = ctx.notes.get("verdict_not_sent", 0) + 1
        return
    ctx.verdict_bytes += nbytes
    ctx.verdict_cases.append(case)


def ship_outputs(ctx: StepContext, info: KernelInfo, alias: str, outcomes: list[CaseOutcome]) -> None:
    """The outputs of a passing kernel's cases (the checked launch's, and the poisoned launch's),
    sent to the supervisor, which judges them against the verdict worker's references
    (daemon/verdict.py); at most VERDICT_MAX_BYTES."""
    if not ctx.verdict:
        return
    for o in outcomes:
        if not o.outputs:
            continue
        snaps = [*o.outputs.values(), *o.poison_outputs.values()]
        case = {
            "key": _case_key(info.name, o.size, o.seed, o.edge_case),
            "device": alias,
            "digest": o.input_digest,
            "outputs": _encoded(o.outputs, ctx.sample_seed),
            "poison_outputs": _encoded(o.poison_outputs, ctx.sample_seed),
        }
        _ship(ctx, case, sum(min(len(snap[0]), SAMPLE_ELEMENTS * 8) for snap in snaps))


def ship_timed_outputs(
    ctx: StepContext,
    info: KernelInfo,
    alias: str,
    sets: list[list[Any]],
    size: int,
    seeds: list[int] | None = None,
    window: int | None = None,
    pending: PendingDigest | None = None,
) -> None:
    """Called by steps/bench.py after the timed loop (and, on CUDA timed in several windows, at the
    end of every window): what the benchmark's own buffers hold (the inputs it timed on: the seed
    ``seeds[k]`` of ``sets[k]``, by default ctx.seed + TIMED_SEED + k, and the outputs its last
    timed launch left), sent to the supervisor to be judged like a validation case. A kernel that
    is right only when checked is wrong here. Kernels with in-place outputs are left out (their
    buffers hold many launches' worth of updates, no reference describes that). ``pending``: the
    first set's digest made from its host arrays while it was timed (steps/timed_digest.py)."""
    contract = info.contract
    if not ctx.verdict or contract is None or contract.inplace:
        return
    params = _params(info.runnable)
    chosen = sets[:TIMED_SETS] if seeds is None else sets
    for k, args in enumerate(chosen):
        seed = ctx.seed + TIMED_SEED + k if seeds is None else seeds[k]
        scalars = {n: args[j] for j, (n, t) in enumerate(params) if not is_array(t)}
        # one output at a time, read back once and sampled at once (no workspace code runs in
        # between): a 1 GiB output costs 1 GiB of host memory, not the 3-4 GiB of a copy of
        # every array plus the output's bytes (stream_large on an H100 went past the default
        # 4,096 MB limit that way)
        outputs: dict[str, Any] = {}
        nbytes = 0
        for n in contract.outputs:
            j = names_index(params, n)
            outputs[n] = encode_array(_timed_sample(args[j], _numpy_dtype(params[j][1]), ctx.sample_seed))
            nbytes += min(int(args[j].capacity), SAMPLE_ELEMENTS * 8)
        case: dict[str, Any] = {
            "key": _case_key(info.name, size, seed, TIMED_CASE),
            "device": alias,
            "outputs": outputs,
            "timed": True,
        }
        if pending is not None and k == 0:
            pending.digest_for(args, case, scalars)
        else:
            case["digest"] = streamed_input_digest(params, args, contract.outputs, scalars)
        if window is not None:
            case["window"] = window
        _ship(ctx, case, nbytes)


def _timed_sample(array: Any, np_dtype: Any, sample_seed: int | None) -> np.ndarray:
    """``sampled(array.numpy(), sample_seed)``: on a CUDA device gathered there (4,096 scalars
    read back, not a 1 GiB output: stream_large's timed sets on an H100), else read back."""
    shape = tuple(int(d) for d in array.shape)
    per_element = int(np.prod(getattr(array.dtype, "_shape_", ()) or (1,)))
    n = int(np.prod(shape)) * per_element
    idx = sample_indices(n, sample_seed) if sample_seed is not None else None
    if idx is not None and device_check.can_gather(array, np_dtype):
        return device_check.gathered(array, np_dtype, idx)
    return sampled(to_numpy(array), sample_seed)


def refill_seeds(seed: int, windows: int) -> list[int]:
    """The seeds of the inputs a CUDA benchmark timed in ``windows`` windows puts into its buffers
    in the gaps between windows (steps/bench.py: gap ``w`` re-validates set ``(w - 1) % 3`` of the
    three on fresh inputs of ctx.seed + REVALIDATE_SEED + 100 w + that set), which the next
    windows time: the verdict worker computes their references too."""
    return [seed + REVALIDATE_SEED + 100 * w + (w - 1) % TIMED_SETS for w in range(1, windows)]


def names_index(params: list[tuple[str, Any]], name: str) -> int:
    return next(j for j, (n, _) in enumerate(params) if n == name)


def reference_cases(
    ctx: StepContext,
    kernels: Mapping[str, KernelInfo],
    max_bytes: int = VERDICT_MAX_BYTES,
    timed: bool = False,
    windows: int = 1,
) -> dict[str, Any]:
    """In the verdict worker (never launches a kernel): the references of every validation case
    (``planned_cases``: the contract's sizes, the drawn sizes, its edge cases) and, with
    ``timed``, of the benchmark's input sets (and with ``windows`` > 1, a CUDA benchmark timed in
    that many windows, of the inputs its gaps put into the buffers: ``refill_seeds``, when a set
    fits the benchmark's check on the host, steps/device_check.REVALIDATE_MAX_BYTES), from inputs
    regenerated from the seed, while their
    outputs fit in ``max_bytes``; ``initial``: each output as the launch finds it (the
    generator's values, or the untouched input of an in-place output), for the vacuity check.
    ``missing``: the kernels some declared case of which has no reference (it raised here)."""
    out: list[dict[str, Any]] = []
    missing: list[str] = []
    total = 0
    for info in kernels.values():
        contract = info.contract
        if contract is None or info.name in ctx.skip:
            continue
        cases = planned_cases(contract, ctx.seed)
        params = _params(info.kernel)
        if timed and not contract.inplace:
            for size in contract.benchmark_sizes_for(ctx.options.devices):
                cases += [
                    PlannedCase(size, ctx.seed + TIMED_SEED + k, TIMED_CASE, contract.inputs, drawn=True)
                    for k in range(TIMED_SETS)
                ]
                if windows > 1:  # left out below where a set is too big for the gaps' host check
                    cases += [
                        PlannedCase(size, s, TIMED_CASE, contract.inputs, drawn=True)
                        for s in refill_seeds(ctx.seed, windows)
                    ]
        names = [n for n, _ in params]
        tols = {a: contract.tolerance_for(a) for a in {*ctx.options.devices, "cpu", "cuda"}}
        set_bytes: dict[int, int] = {}  # timed size -> the bytes of one of its input sets
        for case in cases:
            if case.edge_case == TIMED_CASE and case.size in set_bytes:
                if _timed_set_unused(case, set_bytes[case.size], ctx.seed):
                    continue
            try:
                inputs = make_inputs(case.gen, case.size, case.seed)
                if case.edge_case != TIMED_CASE and contract.check_constraints(inputs) is not None:
                    continue
                arrays = {
                    n: np.ascontiguousarray(inputs[n], dtype=_numpy_dtype(t))
                    for n, t in params
                    if is_array(t)
                }
                if case.edge_case == TIMED_CASE:
                    set_bytes.setdefault(case.size, sum(int(a.nbytes) for a in arrays.values()))
                originals = {
                    n: a for n, a in arrays.items() if n not in contract.outputs or n in contract.inplace
                }
                digest = input_digest(params, originals, inputs)
                initial = {
                    n: encode_array(sampled(arrays[n], ctx.sample_seed))
                    for n in contract.outputs
                    if n in arrays
                }
                # write-only outputs: the reference never reads them, and a 1 GiB one counts here
                unread = set(contract.outputs) - set(contract.inplace)
                inputs = {n: v for n, v in inputs.items() if n not in unread}
                arrays = {n: a for n, a in arrays.items() if n not in unread}
                refs = reference_outputs(contract, names, originals, inputs)
            except Exception as exc:  # a broken contract is the kernel worker's to report
                ctx.notes.setdefault("verdict_errors", []).append(f"{info.name}: {type(exc).__name__}")
                if not case.drawn:
                    missing.append(info.name)
                continue
            nbytes = sum(min(r.nbytes, SAMPLE_ELEMENTS * 8) for r in refs.values())
            if total + nbytes > max_bytes:
                missing.append(info.name)
                continue
            total += nbytes
            out.append(
                {
                    "key": _case_key(info.name, case.size, case.seed, case.edge_case),
                    "kernel": info.name,
                    "size": case.size,
                    "seed": case.seed,
                    "edge_case": None if case.edge_case == TIMED_CASE else case.edge_case,
                    "drawn": case.drawn and case.edge_case != TIMED_CASE,
                    "timed": case.edge_case == TIMED_CASE,
                    "digest": digest,
                    "refs": {n: encode_array(sampled(r, ctx.sample_seed)) for n, r in refs.items()},
                    "initial": initial,
                    "poisoned": {n: n not in contract.inplace for n in contract.outputs},
                    "tolerance": {a: [t.rtol, t.atol] for a, t in tols.items()},
                }
            )
    return {"cases": out, "missing": sorted(set(missing))}


def _timed_set_unused(case: PlannedCase, nbytes: int, seed: int) -> bool:
    """Whether the benchmark never ships the outputs of this timed set (so it needs no reference):
    above ROTATE_MAX_BYTES for three sets it makes one on the host (its device copies share its
    seed), so the sets of the second and third seeds do not exist; above the gaps' host check
    (REVALIDATE_MAX_BYTES) the gaps check on the device and no refilled set is shipped. A 1 GiB
    set's reference costs the verdict worker seconds and gigabytes (stream_large on an H100)."""
    first_sets = {seed + TIMED_SEED + k for k in range(TIMED_SETS)}
    if case.seed in first_sets:
        return case.seed != seed + TIMED_SEED and nbytes * TIMED_SETS > device_check.ROTATE_MAX_BYTES
    return nbytes > device_check.REVALIDATE_MAX_BYTES


def run(
    ctx: StepContext, kernels: Mapping[str, KernelInfo], devices: Sequence[tuple[str, Any]]
) -> StepOutcome:
    """Every contracted kernel built for a device checked against its reference there: its
    ``validate`` verdict per device, failing cases, and the passing cases' outputs for the
    cross-check."""
    t0 = time.perf_counter()
    for info in kernels.values():
        if info.contract is None or info.name in ctx.skip:
            continue
        for alias, device in devices:
            if ctx.verdicts_of(info.name).compile.get(alias) in ("compiled", "cached"):
                validate_kernel(ctx, info, alias, device)
    ctx.timings["validate_ms"] = (time.perf_counter() - t0) * 1e3
    return ctx.outcome()
