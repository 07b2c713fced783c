"""Where the dynamic tier's jobs run: ``local`` (today's sandboxed worker subprocess, one
``Supervisor`` per engine) or ``ray`` (the same worker code on a Ray cluster's workers,
daemon/ray_executor.py).

An executor has the ``Supervisor``'s job methods (``check``, ``run_case``) so ``Engine`` and
``replay`` use either unchanged: the driver keeps the static tier, the result cache, the failure
library and the reports; only the sandboxed run of one module travels. ``check_many`` runs
``Engine.check`` on several files at once, one engine per thread, as many as the executor has
slots (1 locally, the cluster's free GPUs or CPUs with Ray), and gives the reports back in the
files' order, so a run's output does not depend on which job finished first.

Which executor: ``--executor ray --address ADDR`` (trusted: the user's command line), else
``executor``/``address`` under ``[tool.warp-harness.runtime]``. A workspace's pyproject is the
workspace's own (untrusted) text, and connecting to a cluster hands it Ray's auth token and the
workspace's code: a ``ray`` executor or an ``address`` named only there is used only when the
command line said ``--trust`` (a ``trust = true`` in the same pyproject does not vouch for it).
"""

from __future__ import annotations

import ast
import concurrent.futures
import copy
import json
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from warp_harness.config import ConfigError, find_pyproject, pyproject_data, show_value
from warp_harness.daemon.discovery import AST_LOCK, read_text
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.results import FailingCase, WorkerResult
from warp_harness.record import Record

if TYPE_CHECKING:
    from warp_harness.config import Settings
    from warp_harness.daemon.engine import Engine
    from warp_harness.daemon.results import CheckReport

KINDS = ("local", "ray")


class Executor(Protocol):
    """What the engine and ``replay`` need of whatever runs a job (``Supervisor`` is one)."""

    def check(
        self,
        path: Path,
        *,
        display_path: str | None = None,
        steps: tuple[Step, ...] = DEFAULT_STEPS,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        options: RuntimeOptions | None = None,
        source_sha256: str | None = None,
    ) -> WorkerResult: ...

    def run_case(
        self,
        case: dict[str, Any],
        *,
        mode: str | None = None,
        probe: bool = False,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[str, list[Record]]: ...

    def start(self) -> Any: ...

    def abort(self) -> None: ...

    def close(self) -> None: ...

    def status(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ExecutorChoice:
    kind: str = "local"
    address: str | None = None
    # why this choice may not be used (a cluster only the workspace named): raised as a
    # ConfigError when a job would go there, so an untrusted workspace's static run is unaffected
    refused: str | None = None

    @property
    def remote(self) -> bool:
        return self.kind == "ray"


def executor_choice(
    start: Path,
    *,
    kind: str | None = None,
    address: str | None = None,
    trusted_by_flag: bool = False,
) -> ExecutorChoice:
    """The executor the command line asked for, else the workspace's ``[tool.warp-harness.runtime]``
    ``executor``/``address`` (honoured only with an explicit ``--trust``: see the module doc; else
    the choice is ``refused`` and ``make_executor`` raises, once a job would run)."""
    table = _runtime_table(start)
    where = "[tool.warp-harness.runtime]"
    if kind is None and address is None and ("executor" in table or "address" in table):
        named_kind = table.get("executor", "local")
        named_address = table.get("address")
        if named_kind not in KINDS:
            raise ConfigError(f"{where}: `executor` must be local or ray, got {show_value(named_kind)}")
        if named_address is not None and (not isinstance(named_address, str) or not named_address.strip()):
            raise ConfigError(
                f"{where}: `address` must be a Ray address (host:port), got {show_value(named_address)}"
            )
        if named_kind == "ray" and not trusted_by_flag:
            refused = (
                f"the workspace's {where} sends its jobs to a Ray cluster "
                f"({named_address or 'the address Ray finds'}); a workspace cannot choose where its code "
                "and your Ray token go: pass --executor ray --address ADDR, or --trust to accept it"
            )
            return ExecutorChoice("ray", named_address, refused)
        kind, address = named_kind, named_address
    kind = kind or ("ray" if address else "local")
    if kind not in KINDS:
        raise ConfigError(f"--executor must be local or ray, got {show_value(kind)}")
    if kind == "local" and address:
        raise ConfigError("--address names a Ray cluster: use it with --executor ray")
    return ExecutorChoice(kind, address.strip() if address else None)


def _runtime_table(start: Path) -> Mapping[str, Any]:
    pyproject = find_pyproject(start)
    if pyproject is None:
        return {}
    harness = (pyproject_data(pyproject) or {}).get("tool", {}).get("warp-harness", {})
    table = harness.get("runtime", {}) if isinstance(harness, Mapping) else {}
    return table if isinstance(table, Mapping) else {}


def make_executor(
    choice: ExecutorChoice, workspace: Path, options: RuntimeOptions, *, warmup: bool = False
) -> Executor:
    """A fresh executor for ``workspace`` (only ever called for a trusted workspace)."""
    if choice.refused:
        raise ConfigError(choice.refused)
    if choice.remote:
        from warp_harness.daemon.ray_executor import RayExecutor

        return RayExecutor(workspace, options, address=choice.address)
    from warp_harness.daemon.supervisor import Supervisor

    return Supervisor(workspace, options, warmup=warmup)


def slots(executor: Executor, steps: tuple[Step, ...] = DEFAULT_STEPS) -> int:
    """How many jobs the executor runs at once (1 for a local worker)."""
    count = getattr(executor, "slots", None)
    return max(1, int(count(steps))) if callable(count) else 1


@dataclass
class Engines:
    """The engines of one command's jobs (``ci``, ``bench``, ``tune``): locally each with a worker of
    its own; remotely all sharing one executor, each job on a device of its own (num_gpus=1).
    Only ever made for a trusted workspace."""

    workspace: Path
    settings: Settings
    options: RuntimeOptions
    choice: ExecutorChoice
    overrides: Mapping[str, Any] | None = None
    warmup: bool = False
    on_progress: Callable[[dict[str, Any]], None] | None = None
    shared: Executor | None = field(init=False)

    def __post_init__(self) -> None:
        self.shared = make_executor(self.choice, self.workspace, self.options) if self.choice.remote else None

    def make(self) -> Engine:
        from warp_harness.daemon.engine import Engine

        return Engine(
            self.workspace,
            self.settings,
            self.options,
            True,
            self.overrides,
            warmup=self.warmup,
            record_history=False,
            on_progress=self.on_progress,
            supervisor=self.shared,
        )

    @property
    def parallel(self) -> int:
        """How many of them ``check_many`` runs at once."""
        return slots(self.shared) if self.shared is not None else 1

    def close(self) -> None:
        if self.shared is not None:
            self.shared.close()


def check_many(
    make_engine: Callable[[], Engine],
    targets: Sequence[Path],
    parallel: int,
    *,
    steps: tuple[Step, ...] = DEFAULT_STEPS,
    on_start: Callable[[Path], None] | None = None,
) -> list[CheckReport]:
    """``Engine.check(target, force=True)`` for every target, ``parallel`` at once (an engine per
    thread), the reports in the targets' order. One engine, in this thread, when ``parallel`` is 1."""
    if parallel <= 1 or len(targets) <= 1:
        engine = make_engine()
        try:
            out = []
            for target in targets:
                if on_start is not None:
                    on_start(target)
                out.append(engine.check(target, force=True, steps=steps))
            return out
        finally:
            engine.close()
    local = threading.local()
    engines: list[Engine] = []
    lock = threading.Lock()

    def one(target: Path) -> CheckReport:
        engine: Engine | None = getattr(local, "engine", None)
        if engine is None:
            engine = make_engine()
            local.engine = engine
            with lock:
                engines.append(engine)
        if on_start is not None:
            with lock:
                on_start(target)
        return engine.check(target, force=True, steps=steps)

    try:
        with concurrent.futures.ThreadPoolExecutor(
            max_workers=min(parallel, len(targets)), thread_name_prefix="warp-harness-job"
        ) as pool:
            return list(pool.map(one, targets))
    finally:
        for engine in engines:
            engine.close()


# ------------------------------------------------------------------ a module's check, split
# The Ray executor runs one job per (kernel, device) instead of one per module: the kernels of
# a large module validate and benchmark on several GPUs at once, and a CUDA job holds one GPU
# for one kernel only. Each job imports and builds the module whole (one build per module, the
# same findings of the module itself) and validates and benchmarks only its kernel on its
# device (worker.select_kernels); ``merge_parts`` joins them back into the record set, kernel
# summaries and failing cases one whole-module job gives.


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
        if result.status == "stale":
            return result
    owned = {p.kernel for p in parts if p.owns_one and p.kernel is not None}

    def owner(record: Record) -> str:
        kernel = record.location.kernel
        return kernel if kernel is not None and kernel in owned else _REST

    def part_owner(part: JobPart) -> str:
        return part.kernel if part.owns_one and part.kernel is not None else _REST

    ran = [(p, r) for p, r in zip(parts, results, strict=True) if r.status != "infrastructure"]
    lost = [(p, r) for p, r in zip(parts, results, strict=True) if r.status == "infrastructure"]
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
    kernels: dict[str, dict[str, Any]] = copy.deepcopy(first.kernels)
    for part, result in ran:
        for name, summary in result.kernels.items():
            target = kernels.setdefault(name, copy.deepcopy(summary))
            built = target.setdefault("compile", {})
            for device, state in (summary.get("compile") or {}).items():
                if state == "compiled" or device not in built:
                    built[device] = state
            mine = name in owned if part.owns_one else name not in owned
            if mine and (not part.owns_one or name == part.kernel):
                for field_name in ("validate", "bench"):
                    target.setdefault(field_name, {}).update(summary.get(field_name) or {})
    statuses = [r.status for _, r in ran]
    status = "infrastructure" if lost else next((s for s in statuses if s != "ok"), "ok")
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
                if state == "compiled":
                    built[device] = "cached"
    # as in one job: a kernel that crashed is not run on the options' other devices either
    option_devices = list(dict.fromkeys(p.device for p in parts if p.device is not None))
    for name, why in crashed.items():
        crashed_summary = kernels.get(name)
        if crashed_summary is not None:
            for device in option_devices:
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
