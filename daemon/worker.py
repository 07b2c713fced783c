"""The worker subprocess: a warm ``import warp`` that runs the pipeline's steps on request.

Started by the supervisor as ``python -m warp_harness.daemon.worker --fd N``: it talks
over the inherited socket N (length-prefixed msgpack frames, see protocol.py), never over
stdout/stderr, which the supervisor points at a pipe (Warp and native code print
there; the supervisor keeps the last 64 KiB of it and shows its end after a crash).

Messages: worker -> supervisor ``ready``, ``progress`` (before every risky step: which
kernel, step (the ``stage`` field: a ``pipeline.Step`` value), device, size, seed, and the
time budget for that step), ``done``.
Supervisor -> worker ``job`` (kind ``check`` or ``case``), ``ping``, ``shutdown``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol
from warp_harness.daemon.job_fold import JobFold
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import PIPELINE, Step, steps_from_wire
from warp_harness.daemon.results import WorkerResult
from warp_harness.daemon.steps import JobSpec, KernelInfo, Progress, StepContext, StepOutcome
from warp_harness.record import Severity, Stage
from warp_harness.wire.statuses import Status

_WARM_SOURCE = """import warp as wp

@wp.kernel
def _wh_warmup(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0
"""


class Worker:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.jobs_done = 0

    # ----------------------------------------------------------------- messaging
    def send(self, msg: Mapping[str, Any]) -> None:
        protocol.send_message(self.sock, msg)

    def progress_for(self, job_id: int) -> Progress:
        def progress(**fields: Any) -> None:
            self.send(protocol.message("progress", id=job_id, **fields))

        return progress

    # ----------------------------------------------------------------- start
    def start(self, warmup: bool, precompiled_headers: bool = True) -> None:
        t0 = time.perf_counter()
        wp: Any = importlib.import_module("warp")

        wp.config.log_level = wp.LOG_WARNING
        wp.config.use_precompiled_headers = precompiled_headers
        wp.init()
        guard()  # the identities of launch, clocks and comparisons, before any workspace code
        init_ms = (time.perf_counter() - t0) * 1e3
        warm_ms = 0.0
        if warmup:
            warm_ms = self.warmup()
        self.send(
            protocol.message(
                "ready",
                pid=os.getpid(),
                warp_version=wp.config.version,
                devices=[str(d) for d in wp.get_devices()],
                init_ms=init_ms,
                warmup_ms=warm_ms,
                precompiled_headers=bool(wp.config.use_precompiled_headers),
            )
        )

    def warmup(self) -> float:
        """Compile a throwaway kernel so the per-process precompiled header exists (about 2 s)."""
        import importlib.util

        wp: Any = importlib.import_module("warp")

        t0 = time.perf_counter()
        saved = wp.config.kernel_cache_dir
        with tempfile.TemporaryDirectory(prefix="wh_warm_") as tmp:
            path = Path(tmp) / "_wh_warmup_module.py"
            path.write_text(_WARM_SOURCE + f"\n# {os.getpid()} {time.time()}\n", encoding="utf-8")
            spec = importlib.util.spec_from_file_location("_wh_warmup_module", path)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules["_wh_warmup_module"] = mod
            try:
                spec.loader.exec_module(mod)
                wp.config.kernel_cache_dir = tmp
                wp.launch(
                    mod._wh_warmup, dim=1, inputs=[wp.zeros(1, dtype=float, device="cpu")], device="cpu"
                )
            except Exception:  # a failed warm-up only costs time later
                pass
            finally:
                wp.config.kernel_cache_dir = saved
                sys.modules.pop("_wh_warmup_module", None)
        return (time.perf_counter() - t0) * 1e3

    # ----------------------------------------------------------------- jobs
    def serve(self) -> None:
        while True:
            try:
                msg = protocol.recv_message(self.sock)
            except protocol.ConnectionClosed:
                return
            kind = msg.get("type")
            if kind == "shutdown":
                return
            if kind == "ping":
                self.send(protocol.message("pong", id=msg.get("id")))
                continue
            if kind != "job":
                self.send(
                    protocol.error_message(
                        protocol.E_UNKNOWN_TYPE, f"unknown message {kind!r}", msg.get("id")
                    )
                )
                continue
            job_id = int(msg.get("id") or 0)
            t0 = time.perf_counter()
            try:
                if msg.get("kind") == "case":
                    result = run_case_job(msg, self.progress_for(job_id))
                elif msg.get("kind") == "reference":
                    result = run_reference_job(msg, self.progress_for(job_id))
                elif msg.get("kind") == "replay":  # captured launches: daemon/captured/worker_side.py
                    progress = self.progress_for(job_id)
                    guard()
                    replay_job = _make_fold(msg, progress).context()
                    _configure_warp(replay_job.options)
                    if msg.get("benchmark"):  # the captured launches timed, not judged
                        from warp_harness.daemon.captured.benchmark_worker import run_benchmark_job

                        result = run_benchmark_job(msg, progress, replay_job, guard)
                    else:
                        from warp_harness.daemon.captured.worker_side import run_replay_job

                        result = run_replay_job(msg, progress, replay_job, guard)
                else:
                    result = run_check_job(msg, self.progress_for(job_id))
            except MemoryError:
                result = _failure_result(
                    msg, F.MEMORY, Stage.CRASH, "the job ran out of memory (memory limit)"
                )
            except Exception as exc:
                _end_if_context_lost(exc)  # a GPU fault ends the worker (daemon/steps/launching.py)
                result = _failure_result(
                    msg,
                    F.INTERNAL,
                    Stage.INTERNAL,
                    f"internal error in the worker: {exc!r}",
                    traceback.format_exc(),
                )
            result["worker_ms"] = (time.perf_counter() - t0) * 1e3
            _end_if_context_lost(None)  # a result made in a lost CUDA context is never sent
            self.jobs_done += 1
            self.send(protocol.message("done", id=job_id, result=result))


def _end_if_context_lost(exc: BaseException | None) -> None:
    from warp_harness.daemon.steps.launching import end_if_context_lost

    end_if_context_lost(exc, late=exc is None)


def _failure_result(
    msg: Mapping[str, Any], rule: str, stage: Stage, text: str, detail: str = ""
) -> dict[str, Any]:
    display = str(msg.get("display_path") or msg.get("path") or "?")
    record = F.make_record(stage, rule, Severity.ERROR, display, 1, text, hint=detail[-2000:] or None)
    return WorkerResult(status=Status.ERROR, path=display, records=[record]).to_dict()


def _make_fold(msg: Mapping[str, Any], progress: Progress, devices: list[str] | None = None) -> JobFold:
    """The job a ``job`` message asks for: its frozen spec, and nothing found yet."""
    options = RuntimeOptions.from_dict(msg.get("options") or {})
    if msg.get("mode"):
        options = options.merged({"mode": msg["mode"]})
    if devices is not None:
        options = options.merged({"devices": devices})
    path = Path(str(msg["path"])).resolve()
    seed = options.seed if options.seed is not None else int(msg.get("seed") or secrets.randbelow(2**31))
    expected = msg.get("source_sha256")
    known_positions, known_positions_sha256 = _known_positions(msg.get("positions"))
    spec = JobSpec(
        id=int(msg.get("id") or 0),
        path=path,
        display_path=str(msg.get("display_path") or path),
        workspace=Path(str(msg.get("workspace") or path.parent)).resolve(),
        options=options,
        seed=seed,
        expected_sha256=expected if isinstance(expected, str) and expected else None,
        known_positions=known_positions,
        known_positions_sha256=known_positions_sha256,
        verdict=bool(msg.get("verdict")),
        sample_seed=_sample_seed(msg),
        may_import=msg.get("may_import", True) is not False,
    )
    return JobFold(spec, progress, skip={str(k): str(v) for k, v in (msg.get("skip") or {}).items()})


def _known_positions(value: object) -> tuple[dict[str, tuple[int, int, int]] | None, str | None]:
    """The job's ``positions`` ({"sha256": ..., "kernels": {name: [line, col, end col]}}), or
    (None, None) when it has none or another shape."""
    if not isinstance(value, dict):
        return None, None
    sha, kernels = value.get("sha256"), value.get("kernels")
    if not isinstance(sha, str) or not isinstance(kernels, dict):
        return None, None
    out: dict[str, tuple[int, int, int]] = {}
    for name, pos in kernels.items():
        if not isinstance(name, str) or not isinstance(pos, list | tuple) or len(pos) != 3:
            return None, None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in pos):
            return None, None
        out[name] = (pos[0], pos[1], pos[2])
    return out, sha


def _configure_warp(options: RuntimeOptions) -> None:
    wp: Any = importlib.import_module("warp")

    wp.config.mode = options.mode
    if options.lineinfo is not None:
        wp.config.lineinfo = options.lineinfo
    if options.max_unroll is not None:
        wp.config.max_unroll = options.max_unroll
    if options.optimization_level is not None:
        wp.config.optimization_level = options.optimization_level
    if options.enable_backward is not None:
        wp.config.enable_backward = options.enable_backward


def run_step(step: Step, fold: JobFold) -> StepOutcome:
    """One top-level step after ``import`` on the job so far: the step gets a fresh context and
    the typed outputs of the steps before it, and returns its outcome (``fold.take`` adds it)."""
    from warp_harness.daemon.steps import bench, codegen, compile, validate

    ctx = fold.context()
    if step is Step.CODEGEN:
        return codegen.run(ctx, fold.kernels)
    if step is Step.COMPILE:
        return compile.run(ctx, fold.kernels)
    if step is Step.VALIDATE:
        return validate.run(ctx, fold.kernels, fold.devices)
    if step is Step.BENCH:
        return bench.run(ctx, fold.kernels, fold.devices)
    raise ValueError(f"step {step} is not run on its own")


def run_check_job(msg: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    from warp_harness.daemon.steps import load

    guard()
    fold = _make_fold(msg, progress)
    _configure_warp(fold.spec.options)
    t0 = time.perf_counter()
    progress(stage=Step.IMPORT.value, budget_s=fold.spec.options.timeout_s)
    try:
        loaded = load.load(fold.spec, progress)
        fold.take_loaded(loaded)
        fold.timings["import_ms"] = (time.perf_counter() - t0) * 1e3
        check_integrity(fold, Step.IMPORT)
        check_contracts(fold, Step.IMPORT)
        if fold.stale:
            return fold.result("stale")
        if not loaded.ok:
            return fold.result("import-error")
        select_kernels(fold, msg.get("kernels"))
        requested = steps_from_wire(msg.get("steps"))
        ran: list[Step] = []
        for step in PIPELINE:
            if step is Step.IMPORT:
                continue
            if step.optional and (step not in requested or not getattr(fold.spec.options, step.value)):
                continue
            fold.take(run_step(step, fold))
            ran.append(step)
        cases = [s for s in ran if s.runs_cases]
        if cases:  # the workspace's reference and generators ran again (restored at once too)
            check_integrity(fold, cases[-1] if len(cases) == 1 else None)
            check_contracts(fold, cases[-1] if len(cases) == 1 else None)
        return fold.result("ok")
    finally:
        guard().restore()  # nothing a module rebound reaches the next job of this worker


def select_kernels(job: JobFold, selection: object) -> None:
    """Leave out of validation and benchmarks (``job.skip``) every kernel a job's ``kernels``
    selection leaves out: ``{"only": [names]}`` or ``{"except": [names]}`` (absent: every kernel).
    The module is still imported, generated and built whole (one build per module), so a job of
    one kernel reports the module's own findings as a whole-module job does (daemon/executor.py
    splits a module's check into such jobs and merges them back)."""
    if not isinstance(selection, dict):
        return
    only, excluded = selection.get("only"), selection.get("except")
    for name in job.kernels:
        left_out = (isinstance(only, list) and name not in only) or (
            isinstance(excluded, list) and name in excluded
        )
        if left_out:
            job.skip.setdefault(name, "not-selected")


def _sample_seed(msg: Mapping[str, Any]) -> int | None:
    value = msg.get("sample_seed")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def run_reference_job(msg: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """The verdict worker's job: import the module (for its contracts), regenerate every
    validation case's inputs from the seed and return the references. No kernel is built or
    launched in this process, so no kernel output exists here to echo (daemon/verdict.py)."""
    from warp_harness.daemon.steps import load, validate

    guard()
    job = _make_fold(msg, progress)
    try:
        progress(stage=Step.IMPORT.value, budget_s=job.spec.options.timeout_s)
        loaded = load.load(job.spec, progress)
        job.take_loaded(loaded)
        if not loaded.ok:
            return {"status": "import-error", "cases": []}
        check_integrity(job, Step.IMPORT)
        check_contracts(job, Step.IMPORT)
        select_kernels(job, msg.get("kernels"))
        windows = msg.get("timed_windows")
        windows = windows if isinstance(windows, int) and not isinstance(windows, bool) else 1
        windows = max(1, min(windows, 1000))
        ctx = job.context()
        found = validate.reference_cases(ctx, job.kernels, timed=bool(msg.get("timed")), windows=windows)
        job.take(ctx.outcome())
        check_integrity(job, Step.VALIDATE)
        check_contracts(job, Step.VALIDATE)
        patched = [r.message for r in job.records if r.rule in (F.EVALUATOR_PATCHED, F.CONTRACT_TAMPERED)]
        return {"status": "ok", "seed": job.spec.seed, **found, "patched": patched}
    finally:
        guard().restore()


def run_case_job(msg: Mapping[str, Any], progress: Progress) -> dict[str, Any]:
    """Re-run one stored case (replay, or a debug-mode re-run to localise a bounds failure)."""
    guard()
    device_name = str(msg.get("device") or "cpu")
    job = _make_fold(msg, progress, devices=[device_name])
    _configure_warp(job.spec.options)
    try:
        return _run_case(job, msg, device_name)
    finally:
        guard().restore()


def _run_case(job: JobFold, msg: Mapping[str, Any], device_name: str) -> dict[str, Any]:
    from warp_harness.daemon import comparison
    from warp_harness.daemon.steps import Built, codegen, compile, load, validate

    loaded = load.load(job.spec, job.progress)
    job.take_loaded(loaded)
    check_integrity(job, Step.IMPORT)
    check_contracts(job, Step.IMPORT)
    if not loaded.ok:
        return job.result("stale" if job.stale else "import-error")
    kernel_name = str(msg["kernel"])
    info = job.kernels.get(kernel_name)
    if info is None or info.contract is None:
        job.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                job.spec.display_path,
                1,
                f"stored case: kernel `{kernel_name}` or its contract no longer exists",
            )
        )
        return job.result("error")
    job.take(codegen.run(job.context(), job.kernels))
    probed = False
    if msg.get("probe") and job.verdicts_of(kernel_name).codegen == "ok":
        ctx = job.context()
        devices = compile.resolve_devices(ctx)
        present = dict(devices).get(device_name)
        probe_kernel = _bounds_probe(ctx, info, present, device_name) if present is not None else None
        probed = probe_kernel is not None
        if probe_kernel is not None:
            ctx.set_build(kernel_name, device_name, "compiled")
            kernels = {**job.kernels, kernel_name: probe_kernel}
            job.take(ctx.outcome(Built(tuple(devices), {}, None, kernels)))
        else:  # build the module itself instead (compile reports the devices skipped again)
            tried = ctx.outcome()
            job.take(replace(tried, records=tuple(r for r in tried.records if r.rule != F.DEVICE_SKIPPED)))
    if not probed:
        job.take(compile.run(job.context(), job.kernels))
    if job.verdicts_of(kernel_name).compile.get(device_name) not in ("compiled", "cached"):
        return job.result("error")
    info = job.kernels[kernel_name]
    contract = info.contract
    assert contract is not None
    device = dict(job.devices)[device_name]
    stored = msg.get("inputs")
    given = {k: comparison.decode_value(v) for k, v in stored.items()} if isinstance(stored, dict) else None
    edge = msg.get("edge_case")
    gen = None
    if edge is not None:
        gen = next((c.inputs for c in contract.edge_cases if c.name == edge), None)
        if gen is None and given is None:
            return job.result("error")
    size = int(msg.get("size") or 1)
    seed = int(msg.get("seed") or 0)
    ctx = job.context()
    try:
        outcome = validate.run_case(
            ctx, info, device_name, device, size, seed, edge, gen=gen, given_inputs=given
        )
    except comparison.ContractProblem as exc:
        job.take(ctx.outcome())
        job.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                job.spec.display_path,
                info.line,
                f"stored case of `{kernel_name}`: {exc}",
                kernel=kernel_name,
            )
        )
        return job.result("error")
    job.take(ctx.outcome())
    if outcome.ok:
        return job.result("pass")
    rule, message, hint, expected, actual = validate.describe_failure(info, outcome, grows=False)
    job.add(
        F.make_record(
            Stage.NUMERIC,
            rule,
            Severity.ERROR,
            job.spec.display_path,
            info.line,
            message,
            col=info.col,
            end_col=info.end_col,
            kernel=kernel_name,
            expected=expected,
            actual=actual,
            hint=hint,
        )
    )
    return job.result("fail")


_GUARD: Any = None


def guard() -> Any:
    """The worker's ``integrity.Guard``: made when the worker starts (before any workspace code),
    or at the first job when the pipeline runs without ``Worker.start`` (tests)."""
    global _GUARD
    if _GUARD is None:
        from warp_harness.daemon import integrity
        from warp_harness.daemon.steps import bench, launching, validate  # noqa: F401 - bind TRUSTED

        _GUARD = integrity.Guard()
        integrity.note_persisting_l2_baseline()  # a fresh CUDA context's own limit is no carve-out
    return _GUARD


def check_integrity(job: JobFold, step: Step | None) -> None:
    """WHD060 for every launch, sync, clock or comparison function the workspace rebound
    since the worker started (seen after ``step``); the originals are put back at once."""
    from warp_harness.daemon import integrity

    g = guard()
    changed = g.changed()
    if not changed:
        return
    g.restore(changed)
    when = _when(step)
    shown = ", ".join(f"`{c}`" for c in changed[:6]) + (
        f" and {len(changed) - 6} more" if len(changed) > 6 else ""
    )
    job.notes.setdefault("patched", []).extend(f"{c} ({step or 'validate/bench'})" for c in changed)
    job.add(
        F.make_record(
            Stage.NUMERIC,
            F.EVALUATOR_PATCHED,
            Severity.ERROR,
            job.spec.display_path,
            integrity.patch_line(list(job.source_lines), changed[0]),
            f"the workspace rebound {shown} {when}: code under test may not patch the harness's "
            "launch, synchronisation, timing or comparison functions; the originals were put back "
            "and used for the verdict",
            hint="remove the assignment; launch and time the kernel as it is (a wrapper around "
            "`wp.launch` or the clock is not part of a kernel)",
        )
    )


def _when(step: Step | None) -> str:
    if step is Step.IMPORT:
        return "at import"
    return f"during step `{step}`" if step is not None else "during the validation or the benchmark"


def check_contracts(job: JobFold, step: Step | None) -> None:
    """WHD066 for every contract of the job changed since it was built (its reference,
    generator, tolerance, sizes ... rebound by other code, warp_harness/contract.py's seals);
    rebound fields are bound back at once. Each contract is reported once a job."""
    from warp_harness import contract as contract_api
    from warp_harness.daemon import integrity
    from warp_harness.daemon.steps.validate import contract_at

    reported = job.notes.setdefault("contracts_tampered", [])
    for c in job.contracts:
        changed = contract_api.tampered(c)
        if not changed:
            continue
        in_place = contract_api.restore(c, changed)
        info = next((i for i in job.kernels.values() if i.contract is c), None)
        if info is not None and step is not Step.IMPORT:  # the verdict used the changed contract
            held = job.verdicts_of(info.name)
            revoked = {a: "fail" if v == "pass" else v for a, v in held.validate.items()}
            job.verdicts[info.name] = replace(held, validate=revoked)
            job.records = [
                r for r in job.records if not (r.rule == F.VALIDATED and r.location.kernel == info.name)
            ]
        if c.label in reported:  # changed in place at import: still changed, reported then
            continue
        reported.append(c.label)
        line = 0
        for name in changed:
            line = integrity.patch_line(list(job.source_lines), f"contract.{name}")
            if line > 1:
                break
        if line <= 1:
            line = contract_at(job.context(), info)[0] if info is not None else 1
        fields = ", ".join(f"`{n}`" for n in changed)
        job.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_TAMPERED,
                Severity.ERROR,
                job.spec.display_path,
                line,
                f"contract `{c.label}` changed after it was built ({_when(step)}): {fields}"
                + (
                    f"; {', '.join(f'`{n}`' for n in in_place)} changed in place and could not be put back"
                    if in_place
                    else "; the values it was built with were put back for the rest of the job"
                )
                + ". A contract is the specification its kernel is judged by: code under test may "
                "not rebind its reference, generator, tolerance or sizes",
                kernel=info.name if info is not None else None,
                hint="leave the contract as written (best in a sibling `<module>_contract.py` under "
                "review); change the kernel instead",
            )
        )


def _bounds_probe(job: StepContext, info: KernelInfo, device: Any, alias: str) -> KernelInfo | None:
    """The kernel with the bounds probe (steps/probe.py) as the one to run; None when it cannot be
    built."""
    from warp_harness.daemon.steps import compile, probe

    job.progress(stage=Step.COMPILE.value, kernel=info.name, device=alias, budget_s=job.options.timeout_s)
    try:
        kernel, checked = probe.probe_kernel(info)
        job.notes["probe"] = {"checked": checked}
        if not checked:
            return None
        compile.load_into_cache(
            job, kernel.module, device, salt=probe.PROBE_SALT, block_dim=compile.unit_block_dim([info])
        )
    except Exception as exc:  # the probe is best effort: Warp's own debug check still runs
        text = str(exc).strip()
        job.notes["probe"] = {"error": f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"}
        return None
    return replace(info, runnable=kernel)


ORPHAN_CHECK_S = 0.5


def exit_when_orphaned(parent: int, interval_s: float = ORPHAN_CHECK_S) -> threading.Thread:
    """Exit the process once its parent is gone (the daemon was killed with SIGKILL): a kernel
    that hangs would otherwise keep an orphaned worker spinning. A thread, because the main
    one may be inside a native launch (ctypes releases the GIL while it runs)."""

    def watch() -> None:
        while True:
            time.sleep(interval_s)
            if os.getppid() != parent:
                os._exit(0)

    thread = threading.Thread(target=watch, name="warp-harness-orphan-watch", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="warp-harness-worker")
    parser.add_argument("--fd", type=int, required=True, help="inherited socket to the supervisor")
    parser.add_argument("--warmup", action="store_true", help="compile a throwaway kernel first")
    parser.add_argument(
        "--no-precompiled-headers", action="store_true", help="compile without Warp's precompiled header"
    )
    args = parser.parse_args(argv)
    exit_when_orphaned(os.getppid())
    sock = socket.socket(fileno=args.fd)
    worker = Worker(sock)
    try:
        worker.start(args.warmup, precompiled_headers=not args.no_precompiled_headers)
        worker.serve()
    except protocol.ConnectionClosed:
        pass
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
