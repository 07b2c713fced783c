"""Runs jobs in a persistent worker subprocess and survives whatever the kernels do.

- The worker is started with ``RLIMIT_AS`` (CPU-only runs: CUDA reserves huge virtual
  ranges, so with a CUDA device only the RSS watch below applies), in its own session,
  with stdout/stderr going to a pipe, never to the daemon's protocol. A thread drains the
  pipe and keeps only its last ``OUTPUT_TAIL_BYTES`` (``OutputTail``): a module that prints
  without end costs neither the daemon's memory nor the disk.
- Every job has a wall-clock budget; every ``progress`` message from the worker names
  the kernel/step/size it is about to run and the budget for that step (a launch gets
  ``launch_timeout_s``). Past the budget, or above ``memory_mb`` of RSS, the worker is
  killed and a ``timeout``/memory record is produced.
- When the worker dies (SIGSEGV, SIGILL after a debug bounds assertion, SIGABRT ...), the
  last progress message says which kernel was running; the log tail gives the assertion.
  The worker is restarted and the job re-submitted with that kernel skipped, so every
  other kernel still gets its verdict.
- A crash or bounds-suspect wrong result in release mode is re-run once in Warp's debug
  mode, which turns a silent out-of-bounds access into an assertion.

Here: the retry policy (restart, skip, re-submit, debug re-run) around one worker at a time.
The process itself is ``worker_process.WorkerProcess``; what a death means is
``crash_records``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol, verdict
from warp_harness.daemon.crash_records import (
    BOUNDS_HINT,
    BOUNDS_SIGNALS,
    crash_record,
    crashed_building,
    is_transient,
    localized_record,
    python_access,
)
from warp_harness.daemon.discovery import contract_siblings, has_contracts, kernel_positions, read_text
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.results import FailingCase, WorkerResult
from warp_harness.daemon.worker_process import (
    OUTPUT_TAIL_BYTES,
    START_TIMEOUT_S,
    CallOutcome,
    OutputTail,
    WorkerProcess,
    WorkerStartError,
    output_tail,
    signal_name,
)
from warp_harness.record import Record, Severity
from warp_harness.wire.statuses import Status

__all__ = [  # re-exported: they lived here before the split
    "BOUNDS_HINT",
    "OUTPUT_TAIL_BYTES",
    "START_TIMEOUT_S",
    "CallOutcome",
    "OutputTail",
    "Supervisor",
    "WorkerProcess",
    "WorkerStartError",
    "is_transient",
    "output_tail",
    "python_access",
    "signal_name",
]

MAX_JOBS_PER_WORKER = 200
# how long the verdict worker's references may still take once the kernel worker is done
VERDICT_WAIT_S = 30.0


class VerdictUnavailable(Exception):
    """The verdict worker gave no references (why: the message)."""


class Supervisor:
    """Runs check and case jobs for one workspace; thread-safe (one job at a time)."""

    def __init__(
        self,
        workspace: Path,
        options: RuntimeOptions | None = None,
        *,
        warmup: bool = True,
        python: str = sys.executable,
    ) -> None:
        self.workspace = workspace.resolve()
        self.options = options or RuntimeOptions()
        self.warmup = warmup
        self.python = python
        self.worker: WorkerProcess | None = None
        self.restarts = 0
        self.crashes = 0
        self._lock = threading.RLock()
        self._next_id = 1
        self._closing = threading.Event()  # set by abort(), from any thread
        self._starting: WorkerProcess | None = None
        # the second worker that computes references and never runs a kernel (daemon/verdict.py)
        self.verdict: WorkerProcess | None = None
        # One module per worker: whatever a module changed in a process (a patch of the harness's
        # classes, of numpy, of the standard library) must not reach another module's job, so a
        # job for another module than the worker's last gets a fresh worker (and verdict worker).
        # Saves of one module keep their warm workers. Once modules alternate (ci, bench), the
        # next worker is started while the current job runs (``_spare``).
        self._module: str | None = None
        self._verdict_module: str | None = None
        self._spare: WorkerProcess | None = None
        # the same for the verdict worker: started while the current module's references are computed
        self._verdict_spare: WorkerProcess | None = None
        # the devices the last kernel worker found (its ready message): when a kernel crashed and
        # its worker is gone, the references of its module's other kernels still need them
        self._worker_devices: list[str] = []
        self.fresh_starts = 0  # workers replaced because the module changed
        self._aliases: dict[str, str] = {}  # a variant file the harness wrote -> its module

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> WorkerProcess:
        with self._lock:
            if self._closing.is_set():
                raise WorkerStartError("the daemon is stopping: no new worker is started")
            if self.worker is not None and self.worker.alive():
                return self.worker
            if self.worker is not None:
                self.worker.kill()
                self.restarts += 1
            worker, self._spare = self._spare, None
            if worker is None or not worker.alive():
                if worker is not None:
                    worker.kill()
                worker = WorkerProcess(self.workspace, self.options, warmup=self.warmup, python=self.python)
            self._starting = worker
            try:
                worker.wait_ready()
            finally:
                self._starting = None
            if self._closing.is_set():
                worker.kill()
                raise WorkerStartError("the daemon is stopping: no new worker is started")
            self.worker = worker
            self._worker_devices = [str(d) for d in worker.ready.get("devices") or []]
            return self.worker

    def close(self) -> None:
        with self._lock:
            for spare in (self._spare, self._verdict_spare):
                if spare is not None:
                    spare.kill()
            self._spare = self._verdict_spare = None
            if self.worker is not None:
                self.worker.shutdown()
                self.worker = None
            if self.verdict is not None:
                self.verdict.shutdown()
                self.verdict = None

    def abort(self) -> None:
        """Kill the worker now, even in the middle of a job (any thread; does not wait for
        the job's lock), and start no other: the job in flight ends as a crash."""
        self._closing.set()
        for worker in (self._starting, self.worker, self.verdict, self._spare, self._verdict_spare):
            if worker is not None:
                worker.kill_only(drain=False)

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def status(self) -> dict[str, Any]:
        w = self.worker
        return {
            "worker_pid": w.pid if w and w.alive() else None,
            "worker_jobs": w.jobs if w else 0,
            "restarts": self.restarts,
            "crashes": self.crashes,
            "warp_version": (w.ready.get("warp_version") if w else None),
        }

    def alias_module(self, variant: Path, origin: Path) -> None:
        """Count jobs of ``variant`` (a copy of ``origin`` the harness itself wrote, as `tune`
        does for each candidate) as jobs of ``origin``'s module: they share its warm workers."""
        self._aliases[str(variant.resolve())] = str(origin.resolve())

    def _module_of(self, path: str) -> str:
        return self._aliases.get(path, path)

    def _call(
        self, msg: dict[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None
    ) -> CallOutcome:
        if on_progress is not None and (self.worker is None or not self.worker.alive()):
            # a fresh worker imports Warp (seconds; 7-11 s after a crash was measured): say so
            on_progress({"stage": "worker-restart" if self.restarts or self.crashes else "worker-start"})
        module = self._module_of(str(msg.get("path") or ""))
        switched = self.options.isolate_modules and self._module is not None and module != self._module
        if switched and self.worker is not None:  # nothing of the last module's process survives
            self.worker.shutdown()
            self.worker = None
            self.fresh_starts += 1
            if on_progress is not None:
                on_progress({"stage": "worker-start"})
        worker = self.start()
        if worker.jobs >= MAX_JOBS_PER_WORKER:  # bound the growth of re-imported modules
            worker.shutdown()
            self.worker = None
            worker = self.start()
        self._module = module
        if switched and self._spare is None and not self._closing.is_set():
            try:  # modules alternate: the next one's worker starts while this job runs
                self._spare = WorkerProcess(
                    self.workspace, self.options, warmup=self.warmup, python=self.python
                )
            except OSError:
                self._spare = None
        msg = dict(msg, id=self._next_id)
        self._next_id += 1
        outcome = worker.call(msg, on_progress)
        if outcome.kind != "done":
            self.crashes += 1
            worker.kill()
            self.worker = None
            self.restarts += 1
        return outcome

    def _references(
        self,
        path: Path,
        display: str,
        opts: RuntimeOptions,
        seed: int,
        skip: dict[str, str],
        job_id: int,
        sample_seed: int,
        selection: dict[str, list[str]] | None = None,
        timed: bool = False,
        may_import: bool = True,
    ) -> dict[str, Any]:
        """The verdict worker's references for every validation case of ``path`` at ``seed``;
        raises ``VerdictUnavailable`` saying why there are none (then no pass is confirmed)."""
        if self._closing.is_set():
            raise VerdictUnavailable("the daemon is stopping")
        worker = self.verdict
        module = self._module_of(str(path.resolve()))
        last = self._verdict_module
        switched = opts.isolate_modules and last is not None and module != last
        if worker is not None and (
            not worker.alive()
            or worker.jobs >= MAX_JOBS_PER_WORKER
            or (opts.isolate_modules and module != self._verdict_module)
        ):
            worker.kill()
            worker = self.verdict = None
        self._verdict_module = module
        if worker is None:
            spare, self._verdict_spare = self._verdict_spare, None
            if spare is not None and spare.alive() and spare.options == opts:
                worker = spare
            else:
                if spare is not None:
                    spare.kill()
                try:
                    worker = WorkerProcess(self.workspace, opts, warmup=False, python=self.python, cuda=False)
                except OSError as exc:
                    raise VerdictUnavailable(f"the verdict worker could not start: {exc}") from exc
            self.verdict = worker  # before it is ready: abort() and a late join can kill it
            try:
                worker.wait_ready()
            except WorkerStartError as exc:
                self.verdict = None
                raise VerdictUnavailable(f"the verdict worker could not start: {exc}") from exc
            if self._closing.is_set():
                worker.kill()
                self.verdict = None
                raise VerdictUnavailable("the daemon is stopping")
        if switched and self._verdict_spare is None and not self._closing.is_set():
            try:  # modules alternate: the next module's verdict worker starts while this one works
                self._verdict_spare = WorkerProcess(
                    self.workspace, opts, warmup=False, python=self.python, cuda=False
                )
            except OSError:
                self._verdict_spare = None
        msg = self._base(path, display, opts)
        msg.update(
            kind="reference",
            seed=seed,
            skip=skip,
            id=job_id,
            sample_seed=sample_seed,
            timed=timed,
            may_import=may_import,
        )
        if timed and self._benches_cuda(opts):  # the inputs the gaps between CUDA windows time
            msg["timed_windows"] = max(1, opts.bench_windows)
        if selection:
            msg["kernels"] = selection
        outcome = worker.call(msg, None)
        if outcome.kind != "done" or not isinstance(outcome.result, dict):
            worker.kill()
            self.verdict = None
            raise VerdictUnavailable(f"the verdict worker ended with `{outcome.kind}`")
        return outcome.result

    def _benches_cuda(self, opts: RuntimeOptions) -> bool:
        """Whether the kernel worker benchmarks on a CUDA device (its ready message's devices and
        the job's): only then are its timed windows more than one (steps/bench.py). The last kernel
        worker's devices, not the present one's: after a crash none is present while the module's
        other kernels are judged (the H100 run of 2026-12-07: `copy` after oob_crash's `scatter`
        had no references for its windows' inputs, WHD067)."""
        present = self._worker_devices
        wanted = [d for d in opts.devices if d == "cuda" or d.startswith("cuda:")]
        return any(d.startswith("cuda") for d in present) and bool(wanted)

    # ----------------------------------------------------------------- jobs
    def _base(self, path: Path, display_path: str | None, options: RuntimeOptions) -> dict[str, Any]:
        return protocol.message(
            "job",
            path=str(path.resolve()),
            display_path=display_path or str(path),
            workspace=str(self.workspace),
            options=options.to_dict(),
        )

    def check(
        self,
        path: Path,
        *,
        display_path: str | None = None,
        steps: tuple[Step, ...] = DEFAULT_STEPS,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        options: RuntimeOptions | None = None,
        source_sha256: str | None = None,
        kernels: Mapping[str, list[str]] | None = None,
        seed: int | None = None,
    ) -> WorkerResult:
        """Run the pipeline's steps (``steps``: the optional ones to run) on one module; the
        worker's result, with crash records merged in.

        ``source_sha256``: the text the caller analysed; a worker that finds another text in the
        file returns status ``stale`` and no records (the file was saved again meanwhile).
        ``kernels``: which kernels to validate and benchmark (``{"only": [...]}`` or
        ``{"except": [...]}``; worker.select_kernels), the module is built whole either way.
        ``seed``: the inputs' seed when the options name none (the jobs of one module split by
        kernel share one)."""
        with self._lock:
            t_start = time.perf_counter()
            opts = options or self.options
            display = display_path or str(path)
            skip: dict[str, str] = {}
            extra: list[Record] = []
            failures: list[FailingCase] = []
            text = read_text(path) or ""
            # whether the module can be built from its text (WHD069), decided from the text while
            # the worker runs: off the save's critical path. Started at the worker's first message,
            # not before the job is sent: its ~5 ms of parsing holds the GIL this thread needs to
            # send the job (it delayed every save by 3-6 ms)
            siblings = contract_siblings(path)
            hermetic = _Background(lambda: verdict.why_not_hermetic(path, text, siblings))
            positions = kernel_positions(text)
            # sent with the job: the worker need not parse the same text again
            known_positions = {
                "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
                "kernels": {name: list(pos) for name, pos in positions.items()},
            }
            t0 = time.monotonic()
            # the seed is chosen here: the verdict worker and the kernel worker use the same one
            if opts.seed is not None:
                seed = opts.seed
            elif seed is None:
                seed = secrets.randbelow(2**31)
            selection = dict(kernels) if kernels else None
            transient = False
            # the verdict worker computes the references while the kernel worker compiles
            # (daemon/verdict.py): started at the kernel worker's first `compile` (after its
            # import, which would otherwise compete for the CPU; a module that does not import
            # or has no kernel needs no references); `first_launch`: when the kernel worker
            # announced its first validation launch, to tell whether the references were
            # complete by then
            verdict_job: _VerdictJob | None = None
            first_launch: list[float] = []
            user_callback = on_progress

            def started(msg: dict[str, Any]) -> None:
                hermetic.start()
                if user_callback is not None:
                    user_callback(msg)

            on_progress = started
            if opts.verdict_worker and opts.validate and Step.VALIDATE in steps:
                sample_seed = secrets.randbelow(2**31)  # the elements of large outputs compared
                timed = opts.bench and Step.BENCH in steps
                verdict_job = _VerdictJob(
                    self, path, display, opts, seed, dict(skip), sample_seed, selection, timed
                )
                user_progress = on_progress
                job = verdict_job

                def tracking(msg: dict[str, Any]) -> None:
                    stage = msg.get("stage")
                    if stage == Step.COMPILE.value and not job.started:
                        job.start()
                    if not first_launch and stage == Step.VALIDATE.value:
                        first_launch.append(time.monotonic())
                    if user_progress is not None:
                        user_progress(msg)

                on_progress = tracking

            call_ms = 0.0  # the kernel worker's calls, IPC included
            t_before = time.perf_counter()
            # a module with a contract is imported (its top-level code run) only once this process
            # decided itself that it cannot be built from its text: were the workers left to decide
            # alone, a module whose imported files change between their reading and this one's
            # (its own top-level code can rewrite them) would run while its verdict says hermetic
            may_import = not (siblings or has_contracts(text))
            for _attempt in range(len(positions) + 3):
                msg = self._base(path, display, opts)
                msg.update(
                    kind="check",
                    skip=skip,
                    steps=[s.value for s in steps],
                    verdict=verdict_job is not None,
                    may_import=may_import,
                )
                if verdict_job is not None:
                    verdict_job.may_import = may_import
                if verdict_job is not None:
                    msg["sample_seed"] = verdict_job.sample_seed
                if source_sha256:
                    msg["source_sha256"] = source_sha256
                msg["positions"] = known_positions
                if selection:
                    msg["kernels"] = selection
                if seed is not None:
                    msg["seed"] = seed
                t_call = time.perf_counter()
                outcome = self._call(msg, on_progress)
                call_ms += (time.perf_counter() - t_call) * 1e3
                if outcome.kind == "done":
                    result = WorkerResult.from_dict(outcome.result or {})
                    refused = result.notes.get("needs_import") if result.status == Status.STALE else None
                    if refused is not None and not may_import and hermetic.result() != verdict.HERMETIC:
                        may_import = True  # this process agrees: it reports WHD069 for the import
                        continue
                    # else it builds from the texts this process read, not from the worker's:
                    # they changed between the two readings, the job is stale (checked again)
                    break
                record, failure = crash_record(outcome, display, positions, opts, path)
                kernel = outcome.progress.get("kernel")
                seed = outcome.progress.get("seed") if seed is None else seed
                if is_transient(outcome):
                    transient = True
                if failure is not None:
                    failures.append(failure)
                    loc = self._localize(path, display, failure, outcome, opts, positions)
                    if loc is not None and record.rule == F.BOUNDS and loc.severity is Severity.ERROR:
                        # a debug build's assertion, now placed on the access: one record
                        died = f"; the worker died with {failure.signal}"
                        record = replace(loc, message=loc.message + died)
                    elif loc is not None:
                        extra.append(loc)
                extra.append(record)
                if not kernel or kernel in skip or crashed_building(outcome):
                    result = WorkerResult(status=Status(outcome.kind), path=display)
                    break
                skip[str(kernel)] = outcome.kind
            else:  # pragma: no cover - every kernel crashed in turn
                result = WorkerResult(status=Status.CRASH, path=display)
            for failure in result.failures:
                if opts.localize and failure.bounds_suspect and opts.mode != "debug":
                    loc = self._localize(path, display, failure, None, opts, positions)
                    if loc is not None:
                        extra.append(loc)
            shipped = result.extra.pop("verdict_cases", None) or []
            t_judge = time.perf_counter()
            if verdict_job is not None:
                self._judge(result, verdict_job, shipped, first_launch, display, positions)
            t_hermetic = time.perf_counter()
            if result.status not in ("import-error", "stale"):  # hermetic (#37 item 1): WHD069
                why = hermetic.result()
                extra.extend(
                    verdict.not_hermetic(
                        path, text, result.kernels, display, positions, opts.require_hermetic, reason=why
                    )
                )
                if why == verdict.HERMETIC:  # imported, a patch that ran is the worker's to report
                    patched = verdict.tampering(text, result.kernels, display, positions)
                    if patched:  # no "matches its reference" beside a pass taken back
                        result.records = [r for r in result.records if r.rule != F.VALIDATED]
                        extra.extend(patched)
            t_end = time.perf_counter()
            result.timings.update(
                supervisor_before_ms=(t_before - t_start) * 1e3,
                supervisor_call_ms=call_ms,
                supervisor_judge_ms=(t_hermetic - t_judge) * 1e3,
                supervisor_hermetic_ms=(t_end - t_hermetic) * 1e3,
            )
            result.records = sorted([*result.records, *extra], key=lambda r: r.sort_key())
            result.failures = [*failures, *result.failures]
            # the devices the job ran on, as resolved (cuda:0, not cuda); a job that ran to its end on
            # none (every device skipped) gives none: only a job that died says nothing of them
            ran_on = result.devices if result.devices or result.status == "ok" else list(opts.devices)
            for name, why in skip.items():
                summary = result.kernels.get(name)
                if isinstance(summary, dict):
                    for device in ran_on:
                        summary.setdefault("validate", {})[device] = why
            result.crashed_kernels = skip
            # a verdict that says more about the machine than about the code is not cached
            result.cacheable = not transient and not result.notes.get("transient")
            result.elapsed_ms = (time.monotonic() - t0) * 1e3
            return result

    def _judge(
        self,
        result: WorkerResult,
        job: _VerdictJob,
        shipped: list[dict[str, Any]],
        first_launch: list[float],
        display: str,
        positions: dict[str, tuple[int, int, int]],
    ) -> None:
        """The pass of every kernel stands only as the supervisor's judgement
        (``verdict.judge``): the kernel worker's "matches its reference" records and "pass"
        verdicts are claims, kept only where its outputs matched the verdict worker's references."""
        claimed = any(
            v == "pass" for s in result.kernels.values() for v in (s.get("validate") or {}).values()
        )
        if not job.started and claimed:  # it starts at the first `compile` message, which never came
            job.start()
        refs = job.join(self, VERDICT_WAIT_S) if job.started else None
        why = "" if refs is not None else job.failure or "it was not started"
        judgement = verdict.judge(result.kernels, refs, shipped, display, positions, why_no_references=why)
        notes = judgement.notes
        # the references were complete before the kernel's first launch: no output of the
        # kernel existed yet, in memory or in a file, for them to echo
        notes["before_first_launch"] = bool(
            not first_launch or (job.done_at is not None and job.done_at <= first_launch[0])
        )
        if refs is not None:
            result.notes["verdict"] = notes
        confirmed = judgement.confirmed
        result.records = [
            r
            for r in result.records
            if r.rule != F.VALIDATED or (str(r.location.kernel), _validated_device(r)) in confirmed
        ]
        result.records.extend(judgement.records)
        for name, summary in result.kernels.items():
            verdicts = summary.get("validate") or {}
            for device, value in list(verdicts.items()):
                if value == "pass" and (str(name), str(device)) not in confirmed:
                    verdicts[device] = judgement.withdrawn.get((str(name), str(device)), "error")

    def run_case(
        self,
        case: dict[str, Any],
        *,
        mode: str | None = None,
        probe: bool = False,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[str, list[Record]]:
        """Re-run one stored case: (pass | fail | crash | timeout | error, records).

        ``probe``: run the kernel's bounds probe (steps/probe.py) in debug mode instead.
        """
        with self._lock:
            path = self.workspace / str(case["path"])
            opts = self.options
            msg = self._base(path, str(case.get("path")), opts)
            msg.update(
                kind="case",
                kernel=case["kernel"],
                device=case.get("device", "cpu"),
                size=case.get("size", 1),
                seed=case.get("seed", 0),
                edge_case=case.get("edge_case"),
                inputs=case.get("inputs"),
            )
            if mode:
                msg["mode"] = mode
            if probe:
                msg["probe"] = True
            outcome = self._call(msg, on_progress)
            if outcome.kind == "done":
                done = WorkerResult.from_dict(outcome.result or {"status": "error"})
                return done.status, done.records
            positions = kernel_positions(read_text(path) or "")
            record, _ = crash_record(outcome, str(case.get("path")), positions, opts, path)
            return outcome.kind, [record]

    # ----------------------------------------------------------------- crash handling
    def _localize(
        self,
        path: Path,
        display: str,
        failure: FailingCase,
        crash: CallOutcome | None,
        opts: RuntimeOptions,
        positions: dict[str, tuple[int, int, int]],
    ) -> Record | None:
        """Re-run a bounds suspect in debug mode with the bounds probe (steps/probe.py): an
        out-of-bounds access then stops at the Python line of the access."""
        if not opts.localize or not failure.bounds_suspect:
            return None
        if crash is not None and signal_name(crash.returncode) not in BOUNDS_SIGNALS:
            return None
        case = {**failure.to_dict(), "path": str(path.resolve().relative_to(self.workspace))}
        status, records = self.run_case(case, mode="debug", probe=True)
        return localized_record(path, display, failure, status, records, positions)


def _validated_device(record: Record) -> str:
    """The device of a "matches its reference on DEVICE: ..." record (steps/validate.py)."""
    found = re.search(r" matches its reference on (\S+?):", record.message)
    return found.group(1) if found else ""


class _Background:
    """``compute()`` in a thread of its own, from ``start()``; ``result()`` waits for it (started
    then if it was not; None when it raised: the caller computes it again, and sees the error)."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._value: Any = None

        def run() -> None:
            try:
                self._value = compute()
            except Exception:
                self._value = None

        self._thread = threading.Thread(target=run, name="warp-harness-hermetic", daemon=True)
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def result(self) -> Any:
        self.start()
        self._thread.join()
        return self._value


class _VerdictJob:
    """The verdict worker's job for one check, in a thread of its own (it runs while the kernel
    worker imports and compiles); ``join`` gives its result, ``done_at`` when it arrived."""

    def __init__(
        self,
        sup: Supervisor,
        path: Path,
        display: str,
        opts: RuntimeOptions,
        seed: int,
        skip: dict[str, str],
        sample_seed: int,
        selection: dict[str, list[str]] | None = None,
        timed: bool = False,
    ) -> None:
        self.sample_seed = sample_seed
        self.may_import = True  # as the kernel worker's job that starts it (``Supervisor.check``)
        self.result: dict[str, Any] | None = None
        self.done_at: float | None = None
        self.failure = ""  # why there is no result
        job_id = sup._next_id
        sup._next_id += 1

        def run() -> None:
            try:
                self.result = sup._references(
                    path, display, opts, seed, skip, job_id, sample_seed, selection, timed, self.may_import
                )
            except Exception as exc:  # no references: the supervisor confirms no pass
                self.result = None
                self.failure = f"{type(exc).__name__}: {exc}"
            self.done_at = time.monotonic()

        self._thread = threading.Thread(target=run, name="warp-harness-verdict", daemon=True)

    @property
    def started(self) -> bool:
        return self._thread.ident is not None

    def start(self) -> None:
        self._thread.start()

    def join(self, sup: Supervisor, timeout: float) -> dict[str, Any] | None:
        """The references, waiting at most ``timeout`` after the kernel worker is done (a
        generator or a module that hangs only there must not hold the verdict up); past it the
        verdict worker is killed and the cross-check skipped."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            worker = sup.verdict
            if worker is not None:
                worker.kill_only(drain=False)
            self._thread.join(10.0)
            self.failure = f"it took longer than {timeout:.0f} s after the kernel's worker was done"
            return None
        return self.result
