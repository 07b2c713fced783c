"""A module's dynamic check split into jobs, and the jobs' results merged back.

The Ray executor runs one job per (kernel, device) instead of one per module: the kernels of
a large module validate and benchmark on several GPUs at once, and a CUDA job holds one GPU
for one kernel only. Each job imports and builds the module whole (one build per module, the
same findings of the module itself) and validates and benchmarks only its kernel on its
device (worker.select_kernels); ``merge_parts`` joins them back into the record set, kernel
summaries and failing cases one whole-module job gives.
"""

from __future__ import annotations

import ast
import copy
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warp_harness.daemon.discovery import AST_LOCK, read_text
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import Step
from warp_harness.daemon.results import FailingCase, KernelSummary, WorkerResult
from warp_harness.record import Record
from warp_harness.wire.statuses import Build, Status


@dataclass(frozen=True)
class JobPart:
    """One job of a split check: the kernel it owns (None: the whole module), which kernels it
    validates and benchmarks (``selection``, None: all) and its device (None: every device of
    the options)."""

    kernel: str | None = None
    selection: dict[str, list[str]] | None = None
    device: str | None = None

    @property
    def owns_one(self) -> bool:
        """Whether the job validates one kernel only; else it owns every kernel not owned by
        another job (those found only at run time, in a loop, by a factory ...)."""
        return self.selection is not None and "only" in self.selection

    def options(self, opts: RuntimeOptions) -> RuntimeOptions:
        return opts if self.device is None else opts.merged({"devices": [self.device]})

    def label(self) -> str:
        kernel = f"`{self.kernel}`" if self.owns_one else "the module"
        return f"{kernel} on {self.device}" if self.device else kernel


def kernel_names(source: str) -> list[str]:
    """The module's top-level functions decorated as Warp kernels (``@wp.kernel``,
    ``@warp.kernel(...)``, ``@kernel``), in source order; static, nothing is imported."""
    try:
        with AST_LOCK:
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return []
    names: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name == "kernel" and node.name not in names:
                names.append(node.name)
    return names


def plan_parts(path: Path, steps: tuple[Step, ...], opts: RuntimeOptions) -> list[JobPart]:
    """The jobs of one module's check: one per (kernel, device) when kernels run (validation,
    benchmark), kernel-major as a whole-module job visits them; the first kernel's job also
    owns every kernel not found in the source. One job when nothing runs (compile only)."""
    runs = (Step.VALIDATE in steps and opts.validate) or (Step.BENCH in steps and opts.bench)
    if not runs:
        return [JobPart()]
    names = kernel_names(read_text(path) or "")
    owners: list[tuple[str | None, dict[str, list[str]] | None]] = [(None, None)]
    if len(names) > 1:
        owners = [(names[0], {"except": names[1:]}), *((n, {"only": [n]}) for n in names[1:])]
    devices: list[str | None] = list(opts.devices) if len(opts.devices) > 1 else [None]
    return [JobPart(kernel, selection, device) for kernel, selection in owners for device in devices]


_REST = "\0rest"  # the owner of the records no one-kernel job owns


def _record_key(record: Record) -> str:
    return json.dumps(record.to_dict(), sort_keys=True, default=str)


def _union(lists: Sequence[Sequence[Record]]) -> list[Record]:
    """The records of jobs that differ only in their device: a record they all made (an import
    error, a codegen error) once, each record as often as the job that made it most often."""
    out: list[Record] = []
    taken: Counter[str] = Counter()
    for records in lists:
        counts = Counter(_record_key(r) for r in records)
        for record in records:
            key = _record_key(record)
            if taken[key] < counts[key]:
                out.append(record)
                taken[key] += 1
    return out


def _merge_notes(into: dict[str, Any], notes: Mapping[str, Any]) -> None:
    for key, value in notes.items():
        have = into.get(key)
        if key not in into:
            into[key] = copy.deepcopy(value)
        elif isinstance(have, dict) and isinstance(value, Mapping):  # the cross-check's counts
            for k, v in value.items():
                if isinstance(v, bool) and isinstance(have.get(k), bool):
                    have[k] = have[k] and v
                elif isinstance(v, int | float) and isinstance(have.get(k), int | float):
                    have[k] += v
                else:
                    have.setdefault(k, v)
        elif isinstance(have, list) and isinstance(value, list):
            have.extend(v for v in value if v not in have)


def merge_parts(parts: Sequence[JobPart], results: Sequence[WorkerResult], display: str) -> WorkerResult:
    """One whole-module result from the results of ``plan_parts``'s jobs (in the same order).

    Records: a record about a kernel that has a job of its own comes from that job, every other
    record (the module's import, codegen and build, kernels found only at run time) from the
    job that owns the rest; jobs on different devices give the union of theirs. Kernel
    summaries: a kernel's verdicts per device from its job, its build as any job did it (a job
    that found the build in the kernel cache after another job of the same run built it still
    reports ``compiled``). A result that is ``stale`` makes the whole ``stale``; one that is
    ``infrastructure`` (a lost job) keeps everything the other jobs found."""
    if len(results) == 1:
        return results[0]
    for result in results:
        if result.status == Status.STALE:
            return result
    owned = {p.kernel for p in parts if p.owns_one and p.kernel is not None}

    def owner(record: Record) -> str:
        kernel = record.location.kernel
        return kernel if kernel is not None and kernel in owned else _REST

    def part_owner(part: JobPart) -> str:
        return part.kernel if part.owns_one and part.kernel is not None else _REST

    ran = [(p, r) for p, r in zip(parts, results, strict=True) if r.status != Status.INFRASTRUCTURE]
    lost = [(p, r) for p, r in zip(parts, results, strict=True) if r.status == Status.INFRASTRUCTURE]
    groups: dict[str, list[list[Record]]] = {}
    for part, result in ran:
        groups.setdefault(part_owner(part), []).append(
            [r for r in result.records if owner(r) == part_owner(part)]
        )
    # the module's own findings from another job of the device when the job owning them was lost
    rest_devices = {p.device for p, _ in ran if part_owner(p) == _REST}
    for part, _ in lost:
        if part_owner(part) != _REST or part.device in rest_devices:
            continue
        stand_in = next((r for p, r in ran if p.device == part.device), None)
        if stand_in is not None:
            groups.setdefault(_REST, []).append([r for r in stand_in.records if owner(r) == _REST])
            rest_devices.add(part.device)
    records = [r for lists in groups.values() for r in _union(lists)]
    # what the lost jobs say, once each (every kernel's job on a device the cluster lacks says the same)
    records += list({_record_key(r): r for _, result in lost for r in result.records}.values())

    first = next((r for p, r in ran if part_owner(p) == _REST), ran[0][1] if ran else results[0])
    kernels: dict[str, KernelSummary] = copy.deepcopy(first.kernels)
    for part, result in ran:
        for name, summary in result.kernels.items():
            target = kernels.setdefault(name, copy.deepcopy(summary))
            built = target.setdefault("compile", {})
            for device, state in (summary.get("compile") or {}).items():
                if state == Build.COMPILED or device not in built:
                    built[device] = state
            mine = name in owned if part.owns_one else name not in owned
            if mine and (not part.owns_one or name == part.kernel):
                target.setdefault("validate", {}).update(summary.get("validate") or {})
                target.setdefault("bench", {}).update(summary.get("bench") or {})
    statuses = [r.status for _, r in ran]
    status = Status.INFRASTRUCTURE if lost else next((s for s in statuses if s != Status.OK), Status.OK)
    notes: dict[str, Any] = {}
    timings: dict[str, float] = {}
    failures: list[FailingCase] = []
    crashed: dict[str, str] = {}
    devices: list[str] = []
    deps: list[list[str]] = []
    extra: dict[str, Any] = {}
    for _, result in ran:
        _merge_notes(notes, result.notes)
        for key, ms in result.timings.items():
            timings[key] = timings.get(key, 0.0) + ms
        failures += result.failures
        crashed.update(result.crashed_kernels)
        devices += [d for d in result.devices if d not in devices]
        deps += [d for d in result.deps if d not in deps]
        for key, value in result.extra.items():
            have = extra.get(key)
            if isinstance(value, dict) and isinstance(have, dict):  # build_keys
                have.update(value)
            else:
                extra.setdefault(key, copy.deepcopy(value))
    # a build as one job reports it: made during the check by any of its jobs (whichever ran
    # first) is `compiled`; but one job restarts after a crash and re-runs whole, finding its
    # build in the cache: after any crash every build is `cached`
    if crashed:
        for summary in kernels.values():
            built = summary.get("compile") or {}
            for device, state in built.items():
                if state == Build.COMPILED:
                    built[device] = Build.CACHED
    # as in one job: a kernel that crashed is not run on the other devices the jobs ran on either (as
    # resolved, cuda:0; a device no job ran on, absent or skipped, gets no verdict)
    option_devices = list(dict.fromkeys(p.device for p in parts if p.device is not None))
    for name, why in crashed.items():
        crashed_summary = kernels.get(name)
        if crashed_summary is not None:
            for device in devices or option_devices:
                crashed_summary.setdefault("validate", {}).setdefault(device, why)
    if lost:
        notes["transient"] = True
    return WorkerResult(
        status=status,
        path=display,
        records=sorted(records, key=lambda r: r.sort_key()),
        kernels=kernels,
        failures=failures,
        timings=timings,
        seed=first.seed,
        devices=devices,
        module_hash=next((r.module_hash for _, r in ran if r.module_hash), None),
        deps=deps,
        notes=notes,
        source_sha256=first.source_sha256,
        worker_ms=sum(r.worker_ms or 0.0 for _, r in ran) if ran else None,
        crashed_kernels=crashed,
        cacheable=not lost and all(r.cacheable for _, r in ran),
        extra=extra,
    )
