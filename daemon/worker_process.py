"""One worker subprocess: how it is started, called and killed (``WorkerProcess``).

- Started with ``RLIMIT_AS`` (CPU-only runs: CUDA reserves huge virtual ranges, so with a
  CUDA device only the supervisor's RSS watch applies), in its own session, with
  stdout/stderr going to a pipe, never to the daemon's protocol. A thread drains the pipe
  and keeps only its last ``OUTPUT_TAIL_BYTES`` (``OutputTail``): a module that prints
  without end costs neither the daemon's memory nor the disk.
- ``WorkerProcess.call`` sends one job and follows its ``progress`` messages, each with the
  time budget of the step it announces; past the budget, or above ``memory_mb`` of RSS, the
  worker is killed and the call's ``CallOutcome`` says so (``timeout``/``memory``/``crash``).

What a death means (records) is ``crash_records``; what to do about it (restart, skip the
kernel, re-run in debug mode) is ``supervisor``.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.daemon import kernel_cache, protocol
from warp_harness.daemon.options import RuntimeOptions

START_TIMEOUT_S = 120.0
# "0" in the environment: no worker compiles the warm-up kernel (the compiler's precompiled header,
# ~2 CPU s a worker, which pays off over a long-lived daemon's saves). A test suite that starts
# hundreds of short-lived workers over a shared build cache sets it (tests/conftest.py).
WARMUP_ENV = "WARP_HARNESS_WORKER_WARMUP"
# "0" in the environment: workers compile without Warp's precompiled header. A worker that compiles
# once or twice and exits pays ~1.7 CPU s to build the header in its fresh build cache and saves less
# than that; the test suite's hundreds of short-lived workers are such (tests/conftest.py: daemon test
# files -17% CPU). A user's daemon keeps its workers across saves and keeps the header.
PRECOMPILED_HEADERS_ENV = "WARP_HARNESS_WORKER_PRECOMPILED_HEADERS"
_NOISE = ("Warp CUDA warning: Could not find or load the NVIDIA CUDA driver",)
# how much of the worker's output (stdout and stderr together) the daemon keeps: the end of
# it, where a native assertion or a traceback is printed before the worker dies
OUTPUT_TAIL_BYTES = 64 * 1024
# how long to wait, after the worker died, for the rest of its output to be drained
_DRAIN_WAIT_S = 5.0
# the verdict worker's memory limit, in units of ``memory_mb``: it holds each input and its
# float64 copy, and a float64 reference (stream_large's 1 GiB float32 copies on an H100 found no
# reference within 4,096 MB: WHD067 on a correct kernel at the default limits)
VERDICT_MEMORY_FACTOR = 2
# the worker's RSS is compared with memory_mb at most this often (and at every 0.25 s wait)
RSS_CHECK_S = 0.05
# how much lower the verdict worker's CPU priority is than the kernel worker's
VERDICT_NICENESS = 10
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class WorkerStartError(RuntimeError):
    pass


# the worker's own exit statuses when its CUDA context is lost (steps/launching.py): during a
# kernel's launch (the kernel's verdict), or found after a job (no launch to blame: transient)
CONTEXT_LOST_EXIT = 86
CONTEXT_LOST_LATE_EXIT = 87
# the line the worker writes to its output before it ends that way (crash_records reads it)
CONTEXT_LOST_MARK = "warp-harness: CUDA context lost:"
CONTEXT_LOST_EXITS = {
    CONTEXT_LOST_EXIT: "CUDA_CONTEXT_LOST",
    CONTEXT_LOST_LATE_EXIT: "CUDA_CONTEXT_LOST_LATE",
}


def signal_name(returncode: int | None) -> str:
    if returncode is None:
        return "unknown"
    if returncode in CONTEXT_LOST_EXITS:
        return CONTEXT_LOST_EXITS[returncode]
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

    def __init__(
        self, workspace: Path, options: RuntimeOptions, *, warmup: bool, python: str, cuda: bool = True
    ) -> None:
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
        if not cuda:  # the verdict worker (daemon/verdict.py) launches nothing: no CUDA context
            env["CUDA_VISIBLE_DEVICES"] = ""
        # the verdict worker evaluates references in float64: twice the bytes of float32 inputs
        self.memory_mb = options.memory_mb * (1 if cuda else VERDICT_MEMORY_FACTOR)
        memory = self.memory_mb * 1024 * 1024
        limit_as = not cuda or all(d == "cpu" for d in options.devices)
        # the verdict worker computes its references while the kernel worker compiles: on a busy
        # machine the compile, which the save waits for, goes first
        niceness = 0 if cuda else VERDICT_NICENESS

        def limits() -> None:  # runs in the child between fork and exec
            if limit_as:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if niceness:
                os.nice(niceness)

        from warp_harness.launch import module_command

        # cwd is the workspace: the current folder must not go on sys.path before our code runs
        cmd = module_command("warp_harness.daemon.worker", "--fd", str(child.fileno()), python=python)
        if warmup and os.environ.get(WARMUP_ENV) != "0":
            cmd.append("--warmup")
        if os.environ.get(PRECOMPILED_HEADERS_ENV) == "0":
            cmd.append("--no-precompiled-headers")
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
        self._rss_checked = float("-inf")

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
        """The worker's resident memory (``/proc/PID/statm``: one short line, where ``status``
        is formatted field by field)."""
        try:
            with open(f"/proc/{self.pid}/statm", "rb") as fh:
                return int(fh.read().split()[1]) * _PAGE_SIZE / (1024 * 1024)
        except (OSError, ValueError, IndexError):
            return 0.0

    def over_memory(self, now: float) -> bool:
        """Whether the worker is above ``memory_mb``, read at most every ``RSS_CHECK_S`` (a job
        sends a progress message before every step: each one need not read /proc)."""
        if not self.options.memory_mb or now - self._rss_checked < RSS_CHECK_S:
            return False
        self._rss_checked = now
        return self.rss_mb() > self.memory_mb

    def kill(self) -> None:
        self.kill_only(drain=False)
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
                return self._killed("timeout", last, offset, now - started)
            if self.over_memory(now):
                return self._killed("memory", last, offset, now - started)
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

    def _killed(self, outcome: str, last: dict[str, Any], offset: int, elapsed_s: float) -> CallOutcome:
        """Kill the worker for running past a limit (``timeout``, ``memory``); its output so far."""
        self.kill_only()
        return CallOutcome(
            outcome,
            progress=last,
            output=self.output_since(offset),
            elapsed_s=elapsed_s,
            output_bytes=self.bytes_since(offset),
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


def output_tail(output: str, total_bytes: int, limit: int) -> str:
    """The last ``limit`` characters of a worker's output, after a note of how many bytes
    before them were left out (the daemon never holds more than ``OUTPUT_TAIL_BYTES``)."""
    text = output.strip()
    shown = text[-limit:]
    if len(text) > len(shown) or total_bytes > OUTPUT_TAIL_BYTES:
        omitted = max(total_bytes - len(shown.encode("utf-8", errors="replace")), 0)
        return f"[… {omitted} bytes omitted …]\n{shown}"
    return shown
