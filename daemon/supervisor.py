"""Runs jobs in a persistent worker subprocess and survives whatever the kernels do.

- The worker is started with ``RLIMIT_AS`` (CPU-only runs: CUDA reserves huge virtual
  ranges, so with a CUDA device only the RSS watch below applies), in its own session,
  with stdout/stderr going to a pipe, never to the daemon's protocol. A thread drains the
  pipe and keeps only its last ``OUTPUT_TAIL_BYTES`` (``OutputTail``): a module that prints
  without end costs neither the daemon's memory nor the disk.
- Every job has a wall-clock budget; every ``progress`` message from the worker names
  the kernel/stage/size it is about to run and the budget for that step (a launch gets
  ``launch_timeout_s``). Past the budget, or above ``memory_mb`` of RSS, the worker is
  killed and a ``timeout``/memory record is produced.
- When the worker dies (SIGSEGV, SIGILL after a debug bounds assertion, SIGABRT ...), the
  last progress message says which kernel was running; the log tail gives the assertion.
  The worker is restarted and the job re-submitted with that kernel skipped, so every
  other kernel still gets its verdict.
- A crash or bounds-suspect wrong result in release mode is re-run once in Warp's debug
  mode, which turns a silent out-of-bounds access into an assertion.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from warp_harness.daemon import findings as F
from warp_harness.daemon import kernel_cache, protocol
from warp_harness.daemon.codegen_errors import NativeAssertion, parse_native_assertion
from warp_harness.daemon.discovery import kernel_positions, read_text
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.record import Location, Record, Related, Severity, Stage

START_TIMEOUT_S = 120.0
MAX_JOBS_PER_WORKER = 200
BOUNDS_HINT = "an index reaches past the array: guard it with `if i < arr.shape[0]` or fix the launch dim"
# how a worker dies of an out-of-bounds access: release builds (segfault, or glibc aborting
# on a corrupted heap), debug builds (Warp's assert traps: SIGILL)
_BOUNDS_SIGNALS = ("SIGSEGV", "SIGABRT", "SIGBUS", "SIGILL")
_NOISE = ("Warp CUDA warning: Could not find or load the NVIDIA CUDA driver",)
# how much of the worker's output (stdout and stderr together) the daemon keeps: the end of
# it, where a native assertion or a traceback is printed before the worker dies
OUTPUT_TAIL_BYTES = 64 * 1024
# how long to wait, after the worker died, for the rest of its output to be drained
_DRAIN_WAIT_S = 5.0


class WorkerStartError(RuntimeError):
    pass


def signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "unknown"
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    if returncode > 128:
        try:
            return signal.Signals(returncode - 128).name
        except ValueError:
            pass
    return f"exit status {returncode}"


_SIGNAL_TEXT = {
    "SIGSEGV": "segmentation fault",
    "SIGILL": "illegal instruction",
    "SIGABRT": "abort",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGKILL": "killed",
}


class OutputTail:
    """Drains a pipe (the worker's stdout and stderr) in a thread, keeping the number of
    bytes seen and only the last ``keep`` of them."""

    def __init__(self, fd: int, keep: int = OUTPUT_TAIL_BYTES) -> None:
        self.keep = keep
        self.total = 0
        self._buf = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._drain, args=(fd,), name="warp-harness-worker-output", daemon=True
        )
        self._thread.start()

    def _drain(self, fd: int) -> None:
        try:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except InterruptedError:  # pragma: no cover - retried by Python already
                    continue
                except OSError:
                    break
                if not chunk:
                    break
                with self._lock:
                    self.total += len(chunk)
                    self._buf += chunk
                    if len(self._buf) > 2 * self.keep:  # trim in batches: amortised O(1) a byte
                        del self._buf[: -self.keep]
        finally:
            os.close(fd)

    def wait_closed(self, timeout: float) -> None:
        """Wait until the writer side is closed (the worker is dead) and everything was read."""
        self._thread.join(timeout)

    def since(self, offset: int) -> tuple[bytes, int]:
        """(the kept bytes written after ``offset``, how many bytes after it were not kept)."""
        with self._lock:
            wanted = max(self.total - offset, 0)
            kept = bytes(self._buf[-min(wanted, self.keep) :]) if wanted else b""
            return kept, wanted - len(kept)


@dataclass
class CallOutcome:
    kind: str  # done | crash | timeout | memory
    result: dict[str, Any] | None = None
    returncode: int | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    output: str = ""  # the end of the worker's output during the call (see output_tail)
    elapsed_s: float = 0.0
    output_bytes: int = 0  # how many bytes the worker wrote during the call


class WorkerProcess:
    """One worker subprocess and the socket to it."""

    def __init__(self, workspace: Path, options: RuntimeOptions, *, warmup: bool, python: str) -> None:
        self.workspace = workspace
        self.options = options
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = parent
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        # Warp's default cache is created at init even when unused: keep it in the workspace
        env["WARP_CACHE_PATH"] = str(kernel_cache.usable_folder(workspace, kernel_cache.WARP_DEFAULT))
        env.pop("PYTHONFAULTHANDLER", None)
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONSTARTUP", None)
        memory = options.memory_mb * 1024 * 1024
        limit_as = all(d == "cpu" for d in options.devices)

        def limits() -> None:  # runs in the child between fork and exec
            if limit_as:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        from warp_harness.launch import module_command

        # cwd is the workspace: the current folder must not go on sys.path before our code runs
        cmd = module_command("warp_harness.daemon.worker", "--fd", str(child.fileno()), python=python)
        if warmup:
            cmd.append("--warmup")
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=write_end,
            cwd=str(workspace),
            env=env,
            preexec_fn=limits,
            start_new_session=True,
        )
        child.close()
        os.close(write_end)  # the worker holds it now: the pipe ends when the worker does
        self.output = OutputTail(read_end)
        self.jobs = 0
        self.ready: dict[str, Any] = {}
        self.start_s = 0.0

    def wait_ready(self) -> None:
        """Wait for the worker's ``ready`` (warm import of Warp); WorkerStartError if it dies."""
        t0 = time.monotonic()
        try:
            self.ready = protocol.recv_message(self.sock, timeout=START_TIMEOUT_S)
        except (TimeoutError, protocol.ConnectionClosed, protocol.ProtocolError) as exc:
            self.kill()
            tail = output_tail(self.output_since(0), self.bytes_since(0), 3000)
            raise WorkerStartError(f"the worker did not start ({exc}); its output:\n{tail}") from None
        self.start_s = time.monotonic() - t0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_offset(self) -> int:
        """How many bytes the worker has written so far (a mark for ``output_since``)."""
        return self.output.total

    def output_since(self, offset: int) -> str:
        """The end of what the worker wrote after ``offset`` (at most ``OUTPUT_TAIL_BYTES``;
        ``output_tail`` says how much was left out). Call it once the worker is dead
        (``kill``/``kill_only``/``_died`` wait for the pipe to be drained)."""
        data, omitted = self.output.since(offset)
        text = data.decode("utf-8", errors="replace")
        lines = text.splitlines()[1 if omitted else 0 :]  # the first line kept is a partial one
        return "\n".join(line for line in lines if not line.startswith(_NOISE))

    def bytes_since(self, offset: int) -> int:
        return max(self.output.total - offset, 0)

    def rss_mb(self) -> float:
        try:
            with open(f"/proc/{self.pid}/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            pass
        return 0.0

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        self.sock.close()
        self.output.wait_closed(_DRAIN_WAIT_S)

    def shutdown(self) -> None:
        if self.proc.poll() is None:
            try:
                protocol.send_message(self.sock, protocol.message("shutdown"))
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def call(self, msg: dict[str, Any], on_progress: Callable[[dict[str, Any]], None] | None) -> CallOutcome:
        offset = self.log_offset()
        started = time.monotonic()
        deadline = started + self.options.timeout_s
        job_deadline = deadline
        last: dict[str, Any] = {}
        self.jobs += 1
        try:
            protocol.send_message(self.sock, msg)
        except OSError:
            return self._died(last, offset, started)
        while True:
            now = time.monotonic()
            if now >= min(deadline, job_deadline):
                self.kill_only()
                return CallOutcome(
                    "timeout",
                    progress=last,
                    output=self.output_since(offset),
                    elapsed_s=now - started,
                    output_bytes=self.bytes_since(offset),
                )
            if self.options.memory_mb and self.rss_mb() > self.options.memory_mb:
                self.kill_only()
                return CallOutcome(
                    "memory",
                    progress=last,
                    output=self.output_since(offset),
                    elapsed_s=now - started,
                    output_bytes=self.bytes_since(offset),
                )
            try:
                reply = protocol.recv_message(
                    self.sock, timeout=min(0.25, max(min(deadline, job_deadline) - now, 0.01))
                )
            except TimeoutError:
                continue
            except (protocol.ConnectionClosed, OSError):
                return self._died(last, offset, started)
            kind = reply.get("type")
            if kind == "progress":
                last = reply
                budget = reply.get("budget_s")
                if isinstance(budget, int | float) and budget > 0:
                    deadline = time.monotonic() + float(budget)
                if on_progress is not None:
                    on_progress(reply)
            elif kind == "done":
                return CallOutcome(
                    "done", result=reply.get("result") or {}, elapsed_s=time.monotonic() - started
                )

    def kill_only(self, *, drain: bool = True) -> None:
        """Kill the worker's process group; ``drain``: also wait for the rest of its output."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        if drain:
            self.output.wait_closed(_DRAIN_WAIT_S)

    def _died(self, last: dict[str, Any], offset: int, started: float) -> CallOutcome:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill_only()
            code = self.proc.returncode
        self.output.wait_closed(_DRAIN_WAIT_S)
        return CallOutcome(
            "crash",
            returncode=code,
            progress=last,
            output=self.output_since(offset),
            elapsed_s=time.monotonic() - started,
            output_bytes=self.bytes_since(offset),
        )


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
            return self.worker

    def close(self) -> None:
        with self._lock:
            if self.worker is not None:
                self.worker.shutdown()
                self.worker = None

    def abort(self) -> None:
        """Kill the worker now, even in the middle of a job (any thread; does not wait for
        the job's lock), and start no other: the job in flight ends as a crash."""
        self._closing.set()
        for worker in (self._starting, self.worker):
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

    def _call(
        self, msg: dict[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None
    ) -> CallOutcome:
        worker = self.start()
        if worker.jobs >= MAX_JOBS_PER_WORKER:  # bound the growth of re-imported modules
            worker.shutdown()
            self.worker = None
            worker = self.start()
        msg = dict(msg, id=self._next_id)
        self._next_id += 1
        outcome = worker.call(msg, on_progress)
        if outcome.kind != "done":
            self.crashes += 1
            worker.kill()
            self.worker = None
            self.restarts += 1
        return outcome

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
    ) -> dict[str, Any]:
        """Run the pipeline's steps (``steps``: the optional ones to run) on one module; the result
        dict of the worker, with crash records merged in.

        ``source_sha256``: the text the caller analysed; a worker that finds another text in the
        file returns status ``stale`` and no records (the file was saved again meanwhile)."""
        with self._lock:
            opts = options or self.options
            display = display_path or str(path)
            skip: dict[str, str] = {}
            extra: list[Record] = []
            failures: list[dict[str, Any]] = []
            positions = kernel_positions(read_text(path) or "")
            t0 = time.monotonic()
            seed = opts.seed
            transient = False
            for _attempt in range(len(positions) + 2):
                msg = self._base(path, display, opts)
                msg.update(kind="check", skip=skip, steps=[s.value for s in steps])
                if source_sha256:
                    msg["source_sha256"] = source_sha256
                if seed is not None:
                    msg["seed"] = seed
                outcome = self._call(msg, on_progress)
                if outcome.kind == "done":
                    result = outcome.result or {}
                    break
                record, failure = self._crash_record(outcome, display, positions, opts, path)
                kernel = outcome.progress.get("kernel")
                seed = outcome.progress.get("seed") if seed is None else seed
                if is_transient(outcome):
                    transient = True
                if failure is not None:
                    failures.append(failure)
                    loc = self._localize(path, display, failure, outcome, opts, positions)
                    if loc is not None and record.rule == F.BOUNDS and loc.severity is Severity.ERROR:
                        # a debug build's assertion, now placed on the access: one record
                        died = f"; the worker died with {failure['signal']}"
                        record = replace(loc, message=loc.message + died)
                    elif loc is not None:
                        extra.append(loc)
                extra.append(record)
                if not kernel or kernel in skip or _crashed_building(outcome):
                    result = {"status": outcome.kind, "path": display, "records": [], "kernels": {}}
                    break
                skip[str(kernel)] = outcome.kind
            else:  # pragma: no cover - every kernel crashed in turn
                result = {"status": "crash", "path": display, "records": [], "kernels": {}}
            for failure in result.get("failures") or []:
                if opts.localize and failure.get("bounds_suspect") and opts.mode != "debug":
                    loc = self._localize(path, display, failure, None, opts, positions)
                    if loc is not None:
                        extra.append(loc)
            records = [Record.from_dict(r) for r in result.get("records") or []] + extra
            records.sort(key=lambda r: r.sort_key())
            result["records"] = [r.to_dict() for r in records]
            result["failures"] = failures + list(result.get("failures") or [])
            for name, why in skip.items():
                summary = (result.get("kernels") or {}).get(name)
                if isinstance(summary, dict):
                    for device in opts.devices:
                        summary.setdefault("validate", {})[device] = why
            result["crashed_kernels"] = skip
            # a verdict that says more about the machine than about the code is not cached
            result["cacheable"] = not transient and not (result.get("notes") or {}).get("transient")
            result["elapsed_ms"] = (time.monotonic() - t0) * 1e3
            return result

    def run_case(
        self, case: dict[str, Any], *, mode: str | None = None, probe: bool = False
    ) -> tuple[str, list[Record]]:
        """Re-run one stored case: (pass | fail | crash | timeout | error, records).

        ``probe``: run the kernel's bounds probe (stages/probe.py) in debug mode instead.
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
            outcome = self._call(msg)
            if outcome.kind == "done":
                result = outcome.result or {}
                return str(result.get("status", "error")), [
                    Record.from_dict(r) for r in result.get("records", [])
                ]
            positions = kernel_positions(read_text(path) or "")
            record, _ = self._crash_record(outcome, str(case.get("path")), positions, opts, path)
            return outcome.kind, [record]

    # ----------------------------------------------------------------- crash handling
    def _crash_record(
        self,
        outcome: CallOutcome,
        display: str,
        positions: dict[str, tuple[int, int, int]],
        opts: RuntimeOptions,
        path: Path | None = None,
    ) -> tuple[Record, dict[str, Any] | None]:
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
        assertion = parse_native_assertion(outcome.output)
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
        failure = None
        if kernel and p.get("size") is not None and step is not None and step.runs_cases:
            failure = {
                "kind": kind,
                "kernel": kernel,
                "device": p.get("device", "cpu"),
                "size": p.get("size"),
                "seed": p.get("seed"),
                "edge_case": p.get("edge_case"),
                "rule": record.rule,
                "message": record.message,
                "signal": signal_name(outcome.returncode) if kind == "crash" else None,
                # a crash, or Warp's own assertion (placed at the header): the probe may place it
                "bounds_suspect": kind == "crash" and not record.related,
                "inputs": None,
            }
        return record, failure

    def _localize(
        self,
        path: Path,
        display: str,
        failure: dict[str, Any],
        crash: CallOutcome | None,
        opts: RuntimeOptions,
        positions: dict[str, tuple[int, int, int]],
    ) -> Record | None:
        """Re-run a bounds suspect in debug mode with the bounds probe (stages/probe.py): an
        out-of-bounds access then stops at the Python line of the access."""
        if not opts.localize or not failure.get("bounds_suspect"):
            return None
        if crash is not None and signal_name(crash.returncode) not in _BOUNDS_SIGNALS:
            return None
        case = dict(failure, path=str(path.resolve().relative_to(self.workspace)))
        status, records = self.run_case(case, mode="debug", probe=True)
        kernel = str(failure["kernel"])
        line, col, end_col = positions.get(kernel, (1, 0, 0))
        bounds = next((r for r in records if r.rule == F.BOUNDS), None)
        where = f"size {failure.get('size')}, seed {failure.get('seed')}"
        if bounds is not None and bounds.related:  # placed on the access itself
            failure["localized"] = "line"
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
            failure["localized"] = "bounds"
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
            failure["localized"] = "no-bounds-error"
            return F.make_record(
                Stage.CRASH,
                F.BOUNDS,
                Severity.INFO,
                display,
                line,
                f"debug re-run of kernel `{kernel}` (size {failure.get('size')}) "
                "found no out-of-bounds access",
                col=col,
                end_col=end_col,
                kernel=kernel,
            )
        return None


def output_tail(output: str, total_bytes: int, limit: int) -> str:
    """The last ``limit`` characters of a worker's output, after a note of how many bytes
    before them were left out (the daemon never holds more than ``OUTPUT_TAIL_BYTES``)."""
    text = output.strip()
    shown = text[-limit:]
    if len(text) > len(shown) or total_bytes > OUTPUT_TAIL_BYTES:
        omitted = max(total_bytes - len(shown.encode("utf-8", errors="replace")), 0)
        return f"[… {omitted} bytes omitted …]\n{shown}"
    return shown


def is_transient(outcome: CallOutcome) -> bool:
    """Whether the worker's death says more about the machine than the code: SIGKILL from
    outside (the OOM killer, a user), or a death while importing/compiling (the compiler
    failing to write its output when the cache folder vanished: ``LLVM ERROR: IO failure``)."""
    if outcome.kind != "crash":
        return False
    return signal_name(outcome.returncode) == "SIGKILL" or _crashed_building(outcome)


def _crashed_building(outcome: CallOutcome) -> bool:
    """Whether the worker died in a step that builds the module (import, compile)."""
    step = Step.parse(outcome.progress.get("stage"))
    return step is not None and step.builds


def python_access(assertion: NativeAssertion, path: Path) -> tuple[int, int, int, str] | None:
    """(line, col, end col, source text) of the array access a bounds probe assertion names,
    when it points into ``path``; None for any other assertion."""
    where = assertion.python_location
    text = assertion.python_source
    if where is None or text is None or "[" not in text or text.lstrip().startswith("assert"):
        return None
    file, line = where
    try:
        if Path(file).resolve() != path.resolve():
            return None
    except OSError:
        return None
    lines = (read_text(path) or "").splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    col = source.find(text)
    if col < 0:
        return line, 0, 0, text
    return line, col, col + len(text), text
