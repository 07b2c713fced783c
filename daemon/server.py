"""The daemon: watches a workspace, runs both tiers on saved kernel modules, serves results
over a Unix socket (protocol in docs/protocol.md).

Threads: the asyncio loop (socket clients), watchdog's observer plus our debounce thread,
one job thread that drives the worker subprocess through the Supervisor, and one that
runs the static tier on a saved file while the worker works on it. Workspace code runs
only when the workspace is trusted, only in the worker.

Here: the daemon's lifecycle (claiming the workspace, the socket, stopping), its job queue
(a save becomes a job for ``Engine.check``, results and progress become pushes) and its
client loop. The job engine is ``engine.Engine``, a connection ``connection.Connection``,
the requests ``requests.cmd_*``; ``DaemonThread`` runs a daemon in a background thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from warp_harness.config import load_settings
from warp_harness.daemon import cache as result_cache
from warp_harness.daemon import discovery, protocol, requests
from warp_harness.daemon import findings as F
from warp_harness.daemon.connection import MAX_QUEUED_SENDS, Connection
from warp_harness.daemon.engine import Engine, static_records, untrusted_record, warm_static_tier
from warp_harness.daemon.options import load_runtime_options
from warp_harness.daemon.requests import SERVER_NAME, harness_version
from warp_harness.daemon.results import CheckReport, ReportedRecord
from warp_harness.record import Severity, Stage
from warp_harness.wire.messages import Progress, Removed, Result, StateChange
from warp_harness.wire.statuses import JobState, RecordSet, Status, Tier

__all__ = [  # re-exported: they lived here before the split
    "MAX_QUEUED_SENDS",
    "SERVER_NAME",
    "Connection",
    "Daemon",
    "DaemonAlreadyRunning",
    "DaemonThread",
    "Engine",
    "harness_version",
    "static_records",
    "untrusted_record",
    "warm_static_tier",
]


def job_line(report: CheckReport) -> str:
    """One log line per job (``daemon --verbose``): the file, its status, the verdicts of its
    kernels, its findings and where the time went."""
    counts = {"error": 0, "warning": 0}
    for r in report.records:
        if r.record.severity.value in counts:
            counts[r.record.severity.value] += 1
    verdicts = []
    for name, summary in sorted(report.kernels.items()):
        validate = summary.get("validate") if isinstance(summary, dict) else None
        if isinstance(validate, dict) and validate:
            verdicts.append(f"{name} " + "/".join(f"{dev}:{v}" for dev, v in sorted(validate.items())))
    times = [
        f"{label} {report.timings[key]:.0f} ms"
        for key, label in (("queue_ms", "queued"), ("worker_ms", "worker"), ("static_ms", "static"))
        if isinstance(report.timings.get(key), int | float)
    ]
    parts = [
        f"{report.path}: {report.status}{' (cached)' if report.cached else ''}",
        f"{counts['error']} errors, {counts['warning']} warnings",
    ]
    if verdicts:
        parts.append("; ".join(verdicts))
    parts.append(f"{report.elapsed_ms or 0:.0f} ms" + (f" ({', '.join(times)})" if times else ""))
    return "warp-harness daemon: " + " | ".join(parts)


class DaemonAlreadyRunning(RuntimeError):
    pass


class Daemon:
    def __init__(
        self,
        workspace: Path,
        *,
        trust: bool | None = None,
        overrides: Mapping[str, Any] | None = None,
        runtime_overrides: Mapping[str, Any] | None = None,
        socket_path: Path | None = None,
        watch: bool = True,
        warmup: bool = True,
        debounce_ms: int | None = None,
        max_frame: int = protocol.MAX_FRAME,
        log: Callable[[str], None] | None = None,
        verbose: bool = False,
        first_pass: bool = False,
    ) -> None:
        self.workspace = workspace.resolve()
        self.verbose = verbose
        # check every kernel module once at start (daemon/first_pass.py); the CLI turns it on
        self.first_pass = first_pass
        self._first_pass_task: asyncio.Task[int] | None = None
        self.settings = load_settings(self.workspace, overrides)
        self.trusted = self.settings.trust if trust is None else trust
        self.options = load_runtime_options(self.workspace, runtime_overrides)
        self.socket_path = socket_path or protocol.socket_path_for(self.workspace)
        self.watch = watch
        self.debounce_s = (self.options.debounce_ms if debounce_ms is None else debounce_ms) / 1000
        self.max_frame = max_frame
        self.log = log or (lambda text: print(text, file=sys.stderr, flush=True))
        self.engine = Engine(
            self.workspace,
            self.settings,
            self.options,
            self.trusted,
            overrides,
            warmup=warmup,
            on_progress=self._progress_from_thread,
        )
        # a result is pushed first and written to the result cache and the history after (flush)
        self.engine.cache.write_behind = True
        self.engine.history.write_behind = True
        self.results: dict[str, CheckReport] = {}
        # each file's last result as the maps a `result` message carries, made once per result
        # (the push, `results` and `check` replies send them; `RecordSet`: all records or the dynamic ones)
        self._result_maps: dict[int, tuple[CheckReport, dict[RecordSet, dict[str, Any]]]] = {}
        self.clients: set[Connection] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready = threading.Event()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="warp-harness-job"
        )
        self._server: asyncio.AbstractServer | None = None
        self._watcher: Any = None
        self._pending: dict[Path, asyncio.Future[CheckReport]] = {}
        self._started: set[Path] = set()  # jobs the job thread has begun (read their file)
        self._rerun: set[Path] = set()  # saved again while their job ran: run once more after it
        self.clients_dropped = 0
        self._stop_event: asyncio.Event | None = None
        self.jobs_done = 0
        self.errors_replied = 0
        self._sends: set[asyncio.Future[None]] = set()
        # large request frames held at once, all clients together (protocol.read_message)
        self._frame_budget = protocol.FrameBudget(max_frame)

    # ----------------------------------------------------------------- lifecycle
    # the open lock file (daemon_lock_path) while this daemon owns the workspace
    _lock_fd: int | None = None

    def _claim_socket(self) -> None:
        """Become the workspace's one daemon, or raise DaemonAlreadyRunning; clear a stale socket.

        An exclusive ``flock`` on ``<runtime>/<key>.lock``, held until this daemon stops (or
        dies: the kernel drops it), decides: of daemons started at once exactly one gets it, so
        checking and claiming cannot interleave. Nothing inside the workspace is read: its
        ``.warp-harness/daemon.json`` may have been shipped by a repository.
        """
        protocol.ensure_private_dir(protocol.runtime_dir())
        protocol.ensure_private_dir(self.socket_path.parent)
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(protocol.daemon_lock_path(self.workspace), flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            state = _read_state(self.workspace)
            raise DaemonAlreadyRunning(self._already(state)) from None
        self._lock_fd = fd
        if self.socket_path.exists() or self.socket_path.is_symlink():
            if _accepts(self.socket_path):  # another workspace's daemon, given the same --socket
                self._release_lock()
                taken = f"{self.socket_path} is in use by a daemon of another workspace"
                raise DaemonAlreadyRunning(f"{taken}; choose another --socket")
            self.socket_path.unlink()  # stale: its daemon is gone

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    def _already(self, state: dict[str, Any] | None) -> str:
        pid = state.get("pid") if state else None
        sock = state.get("socket") if state else None
        who = f" (pid {pid})" if isinstance(pid, int) else ""
        where = f" on {sock}" if isinstance(sock, str) else ""
        stop = f"stop it first (kill {pid})" if isinstance(pid, int) else "stop it first"
        return (
            f"a daemon{who} already serves {self.workspace}{where}; {stop}, "
            "or connect to that socket instead of starting another"
        )

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        self._claim_socket()
        try:
            result_cache.state_path(self.workspace, "-")
        except OSError as exc:
            self.log(f"warp-harness daemon: {exc}: no result cache, history or daemon.json is stored")
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._client, path=str(self.socket_path))
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        self._write_state()
        # prune the kernel cache, warm the static tier, start the worker: in the job thread,
        # so the first job queues behind it and the socket answers at once
        self.loop.run_in_executor(self._executor, self._prepare)
        if self.watch:
            from warp_harness.daemon.watcher import Watcher

            self._watcher = Watcher(self.workspace, self._fs_event_from_thread, debounce_s=self.debounce_s)
            self._watcher.start()
        if self.first_pass:
            from warp_harness.daemon.first_pass import run_first_pass

            self._first_pass_task = self.loop.create_task(run_first_pass(self))
        tier = "both tiers (trusted)" if self.trusted else "static tier only: workspace not trusted"
        self.log(f"warp-harness daemon: {self.workspace} on {self.socket_path}; {tier}")
        self.ready.set()

    async def wait_stopped(self) -> None:
        assert self._stop_event is not None
        await self._stop_event.wait()

    def _prepare(self) -> None:
        try:
            self.engine.prepare()
        except Exception as exc:  # the first job reports a worker that cannot start
            self.log(f"warp-harness daemon: start-up step failed: {exc}")
            return
        report = self.engine.prune_report
        if report is not None and report.removed:
            self.log(
                f"warp-harness daemon: kernel cache pruned: {report.removed} build folder(s), "
                f"{report.freed_bytes / 1e6:.1f} MB removed; {report.kept} kept "
                f"({report.kept_bytes / 1e6:.1f} MB)"
            )

    def request_stop(self, reason: str | None = None) -> None:
        if self._stop_event is not None and not self._stop_event.is_set():
            if reason:
                self.log(f"warp-harness daemon: stopping ({reason})")
            self._stop_event.set()

    async def stop(self) -> None:
        if self._first_pass_task is not None:
            self._first_pass_task.cancel()
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._server is not None:
            self._server.close()
            for conn in list(self.clients):
                conn.writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=2)
            self._server = None
        # a job in flight (a kernel that hangs, a long benchmark) must not hold the stop up:
        # kill the worker now, drop queued jobs, then close from a thread of its own
        self.engine.abort()
        self._executor.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.to_thread(self.engine.close), timeout=30)
        with contextlib.suppress(Exception):  # the results pushed are on disk before the lock goes
            await asyncio.to_thread(self.engine.cache.flush, 30)
        if self._lock_fd is None:  # never claimed the workspace: the socket and state are not ours
            return
        for path in (self.socket_path, protocol.daemon_state_path(self.workspace)):
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            self._state_file().unlink()
        self._release_lock()

    async def run(self) -> None:
        await self.start()
        try:
            await self.wait_stopped()
        finally:
            await self.stop()

    def _write_state(self) -> None:
        """Record pid and socket in the private runtime folder (what clients read), and the same
        in ``.warp-harness/daemon.json`` for the user's information (never read back)."""
        state = {
            "pid": os.getpid(),
            "socket": str(self.socket_path),
            "protocol": protocol.PROTOCOL_VERSION,
            "trusted": self.trusted,
            "workspace": str(self.workspace),
            "started": time.time(),
        }
        data = json.dumps(state, indent=2).encode()
        private = protocol.daemon_state_path(self.workspace)
        try:
            result_cache.atomic_write_bytes(private, data, durable=False)
        except OSError as exc:
            self.log(f"warp-harness daemon: {exc}; {private} not written")
        try:
            result_cache.atomic_write_bytes(self._state_file(), data)
        except OSError as exc:  # read-only, or .warp-harness leads out of the workspace
            self.log(f"warp-harness daemon: {exc}; daemon.json not written")

    def _state_file(self) -> Path:
        """``.warp-harness/daemon.json`` (information only); OutsideWorkspaceError (an OSError)
        when it would leave the workspace."""
        return result_cache.state_path(self.workspace, "daemon.json")

    # ----------------------------------------------------------------- events and jobs
    def _fs_event_from_thread(self, path: Path, state: str) -> None:
        """Called by the watcher's thread, in event order. Deciding what a save affects reads
        files (the saved one, the result cache): that happens here, never on the event loop,
        which only queues the jobs, in the same order."""
        if self.loop is None or self.loop.is_closed():
            return
        event_at = time.perf_counter()
        try:
            targets = [] if state == "deleted" else self._targets_for(path)
        except Exception as exc:  # keep watching whatever one file does
            self.log(f"warp-harness daemon: {path}: not checked: {type(exc).__name__}: {exc}")
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(self._fs_event, path, state, targets, event_at)

    def _targets_for(self, path: Path) -> list[Path]:
        """The modules to check after ``path`` was saved (blocking: reads files)."""
        target = discovery.relevant(path)
        targets = [target] if target is not None else []
        targets += [p for p in self.engine.cache.dependents(path) if p.is_file()]
        # a symlink out of the workspace is never checked
        return [t for t in dict.fromkeys(targets) if result_cache.inside(t, self.workspace)]

    def _fs_event(self, path: Path, state: str, targets: list[Path], event_at: float) -> None:
        if state == "deleted":
            display = self.engine.display(path)
            under = f"{display}/"  # a folder renamed or deleted: the files that went with it
            for key in [display, *(k for k in self.results if k.startswith(under))]:
                if key != display and (self.workspace / key).is_file():
                    continue  # the folder is back (renamed back): these files are still there
                if self.results.pop(key, None) is not None:
                    self._broadcast(Removed(key).to_wire())
            return
        for t in targets:
            self.enqueue(t, event_at=event_at, saved=True)

    def enqueue(
        self, path: Path, *, force: bool = False, event_at: float | None = None, saved: bool = False
    ) -> asyncio.Future[CheckReport]:
        """Queue a job for ``path``, or join the one queued for it. ``saved``: the file was just
        saved; if its job is already running (it may have read the old text) one more job runs
        after it, so the last result always comes from the last save."""
        assert self.loop is not None
        path = path.resolve()
        pending = self._pending.get(path)
        if pending is not None and not pending.done() and not force:
            if saved and path in self._started:
                self._rerun.add(path)
            return pending
        fut: asyncio.Future[CheckReport] = self.loop.create_future()
        self._pending[path] = fut
        self._broadcast(StateChange(self.engine.display(path), JobState.QUEUED).to_wire())
        self.loop.create_task(self._run_job(path, fut, force, event_at or time.perf_counter()))
        return fut

    def _check_job(self, path: Path, force: bool, queued_at: float) -> CheckReport:
        self._started.add(path)  # from here on the file's text may already have been read
        queue_ms = (time.perf_counter() - queued_at) * 1e3
        report = self.engine.check(path, force=force)
        report.timings["queue_ms"] = queue_ms
        return report

    async def _run_job(
        self, path: Path, fut: asyncio.Future[CheckReport], force: bool, queued_at: float
    ) -> None:
        assert self.loop is not None
        display = self.engine.display(path)
        self._broadcast(StateChange(display, JobState.RUNNING).to_wire())
        try:
            report = await self.loop.run_in_executor(self._executor, self._check_job, path, force, queued_at)
        except Exception as exc:  # keep serving whatever happened
            record = F.make_record(
                Stage.INTERNAL, F.INTERNAL, Severity.ERROR, display, 1, f"daemon error: {exc!r}"
            )
            record = replace(record, hint=traceback.format_exc()[-2000:])
            report = CheckReport(
                path=display,
                trusted=self.trusted,
                status=Status.ERROR,
                records=[ReportedRecord(record, Tier.DYNAMIC)],
            )
        self.jobs_done += 1
        # renamed or deleted while it was checked: its "deleted" event came before this result,
        # which is kept for the request that asked (the future), never as a ghost entry
        gone = not path.is_file()
        if not gone:
            self.results[display] = report
        elif self.results.pop(display, None) is not None:
            self._broadcast(Removed(display).to_wire())
        if self.verbose:
            self.log(job_line(report))
        if self._pending.get(path) is fut:
            del self._pending[path]
            self._started.discard(path)
        if not fut.done():
            fut.set_result(report)
        if not gone:
            self._broadcast_result(report)
        self._broadcast(StateChange(display, JobState.DONE).to_wire())
        if path in self._rerun and (self._stop_event is None or not self._stop_event.is_set()):
            self._rerun.discard(path)
            if path.is_file():
                self.enqueue(path, event_at=time.perf_counter())

    def _progress_from_thread(self, msg: dict[str, Any]) -> None:
        if self.loop is None or self.loop.is_closed():
            return
        push = Progress.from_wire(msg).to_wire()
        self.loop.call_soon_threadsafe(self._broadcast, push)

    def result_fields(self, report: CheckReport, records: RecordSet = RecordSet.ALL) -> dict[str, Any]:
        """``report`` as a `result` message's fields, converted once per report and record set
        (a report is final once its job ended: the push and every later request send these)."""
        held = self._result_maps.get(id(report))
        if held is None or held[0] is not report:
            live = {id(r) for r in self.results.values()}
            self._result_maps = {k: v for k, v in self._result_maps.items() if k in live}
            held = self._result_maps[id(report)] = (report, {})
        maps = held[1]
        if records not in maps:
            maps[records] = report.to_dict(records)
        return maps[records]

    def _broadcast_result(self, report: CheckReport) -> None:
        for conn in list(self.clients):
            if conn.subscribed and not conn.dropped:
                fields = self.result_fields(report, conn.records)
                self._send(conn, protocol.message(Result.TYPE, push=True, **fields))

    def _broadcast(self, msg: dict[str, Any]) -> None:
        for conn in list(self.clients):
            if conn.subscribed and not conn.dropped:
                self._send(conn, msg)

    def _send(self, conn: Connection, msg: dict[str, Any]) -> None:
        task = asyncio.ensure_future(conn.send(msg))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    # ----------------------------------------------------------------- clients
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(writer, self.max_frame)
        self.clients.add(conn)
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                try:
                    msg = await protocol.read_message(
                        reader, max_size=self.max_frame, budget=self._frame_budget
                    )
                except protocol.ConnectionClosed:
                    break
                except protocol.ProtocolError as exc:
                    self.errors_replied += 1
                    if exc.fatal:  # the stream cannot be resynchronised after a rejected header
                        await conn.send(protocol.error_message(exc.code, exc.message, fatal=True))
                        break
                    await conn.send(protocol.error_message(exc.code, exc.message))
                    continue
                except (ConnectionError, OSError):
                    break
                task = asyncio.ensure_future(self._handle(conn, msg))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            self.clients.discard(conn)
            if conn.dropped:
                self.clients_dropped += 1
            for task in list(tasks):
                if not task.done():
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(asyncio.shield(task), timeout=0.1)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, conn: Connection, msg: dict[str, Any]) -> None:
        request_id = msg.get("id")
        try:
            reply = await self._dispatch(conn, msg)
        except protocol.ProtocolError as exc:
            self.errors_replied += 1
            reply = protocol.error_message(exc.code, exc.message, request_id)
        except Exception as exc:
            self.errors_replied += 1
            reply = protocol.error_message(protocol.E_INTERNAL, f"{type(exc).__name__}: {exc}", request_id)
        if reply is not None:
            reply.setdefault("id", request_id)
            await conn.send(reply)
        if msg.get("type") == "shutdown":
            self.request_stop()

    def path_field(self, msg: dict[str, Any]) -> Path:
        """The request's ``path``: an existing file inside the workspace (else a bad request)."""
        return requests.path_field(self.workspace, msg)

    def queued(self) -> list[str]:
        """The files whose jobs wait or run, as shown to clients."""
        return [self.engine.display(p) for p, f in self._pending.items() if not f.done()]

    async def _dispatch(self, conn: Connection, msg: dict[str, Any]) -> dict[str, Any] | None:
        return await requests.dispatch(self, conn, msg)


def _accepts(sock: Path) -> bool:
    """Whether a daemon accepts connections on ``sock``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(sock))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _read_state(workspace: Path) -> dict[str, Any] | None:
    """The running daemon's record from the private runtime folder (never the workspace's)."""
    return protocol.read_daemon_state(workspace)


class DaemonThread:
    """Run a Daemon on its own event loop in a background thread (tests, benchmarks, embedding)."""

    def __init__(self, daemon: Daemon) -> None:
        self.daemon = daemon
        self.thread = threading.Thread(target=self._main, name="warp-harness-daemon", daemon=True)
        self.error: BaseException | None = None

    def _main(self) -> None:
        try:
            asyncio.run(self.daemon.run())
        except BaseException as exc:  # surfaced by start()
            self.error = exc
            self.daemon.ready.set()

    def start(self, timeout: float = 30.0) -> DaemonThread:
        self.thread.start()
        if not self.daemon.ready.wait(timeout):
            raise TimeoutError("the daemon did not start")
        if self.error is not None:
            raise self.error
        return self

    def stop(self, timeout: float = 30.0) -> None:
        loop = self.daemon.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.daemon.request_stop)
        self.thread.join(timeout)

    def __enter__(self) -> DaemonThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
