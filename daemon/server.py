"""The daemon: watches a workspace, runs both tiers on saved kernel modules, serves results
over a Unix socket (protocol in docs/protocol.md).

Threads: the asyncio loop (socket clients), watchdog's observer plus our debounce thread,
one job thread that drives the worker subprocess through the Supervisor, and one that
runs the static tier on a saved file while the worker works on it. Workspace code runs
only when the workspace is trusted, only in the worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import socket
import stat
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from warp_harness.config import Settings, load_settings
from warp_harness.daemon import cache as result_cache
from warp_harness.daemon import discovery, feedback, kernel_cache, protocol, repros
from warp_harness.daemon import findings as F
from warp_harness.daemon.options import RuntimeOptions, load_runtime_options
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.supervisor import Supervisor
from warp_harness.record import Record, Severity, Stage

SERVER_NAME = "warp-harness-daemon"


class DaemonAlreadyRunning(RuntimeError):
    pass


def harness_version() -> str:
    try:
        from importlib.metadata import version

        return version("warp-harness")
    except Exception:
        return "0.0.0"


def untrusted_record(path: str) -> Record:
    return F.make_record(
        Stage.CONSTRAINT,
        F.UNTRUSTED,
        Severity.INFO,
        path,
        1,
        "workspace not trusted: only the static tier ran; kernels were not imported, compiled or run",
        hint="pass --trust, or set `trust = true` under [tool.warp-harness] in pyproject.toml",
    )


def static_records(path: Path, display: str, overrides: Mapping[str, Any] | None) -> list[Record]:
    """The static tier on one file (no code execution); [] when the engine is unavailable."""
    try:
        from warp_harness.engine import check_file
    except ImportError:
        return []
    try:
        with discovery.AST_LOCK:  # never two parses at once (see discovery.AST_LOCK)
            return list(check_file(path, overrides, display_path=display).records)
    except Exception as exc:  # the static tier must never take the daemon down
        return [
            F.make_record(
                Stage.INTERNAL, F.INTERNAL, Severity.WARNING, display, 1, f"static tier failed: {exc!r}"
            )
        ]


def _timed_static(
    path: Path, display: str, overrides: Mapping[str, Any] | None
) -> tuple[list[Record], float]:
    t0 = time.perf_counter()
    records = static_records(path, display, overrides)
    return records, (time.perf_counter() - t0) * 1e3


def warm_static_tier() -> None:
    """Load the static tier's tables (Warp's builtin signatures: ~170 ms the first time)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wh-static-warm-") as tmp:
        probe = Path(tmp) / "probe.py"
        probe.write_text(
            "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
            "    x[wp.tid()] = wp.sin(x[wp.tid()])\n",
            encoding="utf-8",
        )
        static_records(probe, "probe.py", None)


@dataclass
class Engine:
    """Runs both tiers on one file, with caches, history and the failure library (one thread)."""

    workspace: Path
    settings: Settings
    options: RuntimeOptions
    trusted: bool
    overrides: Mapping[str, Any] | None = None
    warmup: bool = True
    record_history: bool = True
    on_progress: Callable[[dict[str, Any]], None] | None = None
    supervisor: Supervisor | None = None
    cache: result_cache.ResultCache = field(init=False)
    history: feedback.History = field(init=False)
    checks: int = 0
    prune_report: kernel_cache.PruneReport | None = None

    def __post_init__(self) -> None:
        self.workspace = self.workspace.resolve()
        self.cache = result_cache.ResultCache(self.workspace)
        self.history = feedback.History(self.workspace)
        self._static_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="warp-harness-static"
        )
        if self.trusted and self.supervisor is None:
            self.supervisor = Supervisor(self.workspace, self.options, warmup=self.warmup)

    def display(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    def prepare(self) -> None:
        """Start-up work off the event loop: prune the kernel cache, load the static tier's
        tables, start the worker (so the first save does not pay for them)."""
        try:  # left by a process killed in the middle of a write
            result_cache.remove_stale_temp(self.workspace)
        except OSError:
            pass
        if self.trusted:
            try:
                self.prune_report = kernel_cache.prune(
                    self.workspace,
                    keep=self.options.kernel_cache_keep,
                    max_bytes=self.options.kernel_cache_max_mb * 1024 * 1024,
                )
            except OSError:
                self.prune_report = None
        warm_static_tier()
        self.start_worker()

    def start_worker(self) -> None:
        if self.supervisor is not None:
            self.supervisor.start()

    def abort(self) -> None:
        """Stop now: kill the worker mid-job (from any thread); no new worker is started."""
        if self.supervisor is not None:
            self.supervisor.abort()

    def close(self) -> None:
        if self.supervisor is not None:
            self.supervisor.close()
        self._static_pool.shutdown(wait=False, cancel_futures=True)

    def check(
        self, path: Path, *, force: bool = False, steps: tuple[Step, ...] = DEFAULT_STEPS
    ) -> dict[str, Any]:
        t0 = time.perf_counter()
        path = path.resolve()
        display = self.display(path)
        self.checks += 1
        timings: dict[str, float] = {}
        payload: dict[str, Any] = {"path": display, "trusted": self.trusted, "cached": False, "repros": []}
        dynamic: list[Record] = []
        static: list[Record] = []
        if not self.trusted:
            static, timings["static_ms"] = _timed_static(path, display, self.overrides)
            dynamic.append(untrusted_record(display))
            payload.update(status="untrusted", kernels={})
        else:
            key = result_cache.result_key(self.options.to_dict(), steps)
            result, static = self._one_text(path, display, key, force, steps, timings, payload)
            dynamic = [Record.from_dict(r) for r in result.get("records", [])]
            payload.update(
                status=result.get("status"),
                kernels=result.get("kernels", {}),
                seed=result.get("seed"),
                timings={**result.get("timings", {}), **timings, "worker_ms": result.get("worker_ms")},
                module_hash=result.get("module_hash"),
                devices=result.get("devices", []),
            )
            if payload["cached"]:
                payload["repros"] = result.get("repros", [])
        payload.setdefault("timings", timings)
        ordered_static = feedback.order(static)
        ordered_dynamic = feedback.order(dynamic)
        everything = feedback.order([*static, *dynamic])
        t = time.perf_counter()
        streaks = self.history.update(display, everything) if self.record_history else {}
        payload["timings"]["history_ms"] = (time.perf_counter() - t) * 1e3
        tiers = {id(r): "static" for r in ordered_static} | {id(r): "dynamic" for r in ordered_dynamic}
        payload["records"] = [
            feedback.annotate([r], streaks, tier=tiers.get(id(r), "dynamic"))[0] for r in everything
        ]
        payload["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
        return payload

    def _one_text(
        self,
        path: Path,
        display: str,
        key: str,
        force: bool,
        steps: tuple[Step, ...],
        timings: dict[str, float],
        payload: dict[str, Any],
    ) -> tuple[dict[str, Any], list[Record]]:
        """(worker result, static records) that both describe one text of the file.

        The file is hashed before the tiers run; the worker refuses a file whose text has
        another hash (status ``stale``: it was saved again while the job waited, for a worker
        restart say), and the static tier's read must fall between that hash and a second
        one. A stale attempt is done again with the new text, ``STALE_ATTEMPTS`` times at most."""
        for _attempt in range(self.STALE_ATTEMPTS):
            sha = self.source_sha256(path)
            payload["cached"] = False
            result, static = self._both_tiers(path, display, key, sha, force, steps, timings, payload)
            if result.get("status") != "stale" and self.source_sha256(path) == sha:
                payload["source_sha256"] = sha
                return result, static
        payload["source_sha256"] = None
        record = F.make_record(
            Stage.INTERNAL,
            F.INTERNAL,
            Severity.INFO,
            display,
            1,
            f"the file changed while it was being checked ({self.STALE_ATTEMPTS} times): "
            "the dynamic tier's result was dropped; save again to check it",
        )
        return {"status": "stale", "records": [record.to_dict()], "kernels": {}}, static

    def _both_tiers(
        self,
        path: Path,
        display: str,
        key: str,
        sha: str | None,
        force: bool,
        steps: tuple[Step, ...],
        timings: dict[str, float],
        payload: dict[str, Any],
    ) -> tuple[dict[str, Any], list[Record]]:
        """Both tiers once on the text whose hash is ``sha`` (None: unknown, not verified)."""
        assert self.supervisor is not None
        t = time.perf_counter()
        result = None if force else self.cache.lookup(path, key)
        if result is not None and sha is not None and self._dep_sha(result, path) not in (sha, None):
            result = None  # stored for another text than the one just read
        timings["cache_ms"] = (time.perf_counter() - t) * 1e3
        if result is not None:
            payload["cached"] = True
            static, timings["static_ms"] = _timed_static(path, display, self.overrides)
            return result, static
        # the static tier (pure Python, ~3 ms) runs while the worker works
        static_future = self._static_pool.submit(_timed_static, path, display, self.overrides)
        t = time.perf_counter()
        result = self.supervisor.check(
            path, display_path=display, steps=steps, on_progress=self._progress, source_sha256=sha
        )
        timings["check_ms"] = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        stored = self._store_repros(path, result) if result.get("status") != "stale" else []
        payload["repros"] = stored
        result["repros"] = stored
        if self.cacheable(result):
            try:
                self.cache.store(path, key, result)
            except OSError:
                pass
        timings["store_ms"] = (time.perf_counter() - t) * 1e3
        static, timings["static_ms"] = static_future.result()
        return result, static

    # tries before a file that keeps changing while it is checked gets no dynamic result
    STALE_ATTEMPTS = 3
    # larger files are not hashed (the static tier reports them; the worker is not asked to verify)
    HASH_MAX_BYTES = 16 * 1024 * 1024

    @classmethod
    def source_sha256(cls, path: Path) -> str | None:
        """SHA-256 of the file's text now; None when it is not a regular file of a sane size."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the job
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > cls.HASH_MAX_BYTES:
                return None
            with os.fdopen(os.dup(fd), "rb") as fh:
                data = fh.read(cls.HASH_MAX_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        return hashlib.sha256(data).hexdigest()

    @staticmethod
    def _dep_sha(result: Mapping[str, Any], path: Path) -> str | None:
        """The hash a stored result recorded for ``path`` itself."""
        for dep in result.get("deps") or []:
            if isinstance(dep, list | tuple) and len(dep) == 2 and dep[0] == str(path):
                return str(dep[1])
        return None

    @staticmethod
    def cacheable(result: Mapping[str, Any]) -> bool:
        """Whether a worker's result is the code's verdict, to be stored in the result cache.

        Not when the machine or the harness had a part in it: a transient crash (the worker
        killed from outside or by us, a death while compiling), a failure of the file system
        (``notes.transient``: an OSError such as a full disk or EIO), a build in the kernel
        cache that could not be loaded and was rebuilt (``notes.rebuilt``), or any record of
        an internal error."""
        notes = result.get("notes") or {}
        if result.get("cacheable", True) is False or not isinstance(notes, Mapping):
            return False
        if result.get("status") == "stale":  # describes no text the file still holds
            return False
        if notes.get("transient") or notes.get("rebuilt"):
            return False
        return not any(r.get("rule") == F.INTERNAL for r in result.get("records", []))

    def _progress(self, msg: dict[str, Any]) -> None:
        if self.on_progress is not None:
            self.on_progress(msg)

    def _store_repros(self, path: Path, result: dict[str, Any]) -> list[str]:
        stored: list[str] = []
        for failure in result.get("failures") or []:
            try:
                file = repros.store(self.workspace, path, failure, self.options.compile_options())
            except (repros.OutsideWorkspaceError, OSError) as exc:
                result.setdefault("records", []).append(
                    F.make_record(
                        Stage.INTERNAL,
                        F.INTERNAL,
                        Severity.WARNING,
                        self.display(path),
                        1,
                        f"failing case not stored: {exc}",
                    ).to_dict()
                )
                continue
            stored.append(file.relative_to(self.workspace).as_posix())
        return stored


# messages waiting for one connection's socket before it is dropped: a client that stops reading
# (replies and pushes pile up) is disconnected instead of growing the daemon's memory without bound
MAX_QUEUED_SENDS = 1000


class _Conn:
    def __init__(self, writer: asyncio.StreamWriter, max_frame: int) -> None:
        self.writer = writer
        self.max_frame = max_frame
        self.subscribed = True
        self.lock = asyncio.Lock()
        self.client: str | None = None
        self.waiting = 0  # sends queued behind the lock (the socket is not being read)
        self.dropped = False

    def drop(self) -> None:
        """Disconnect now (the peer stopped reading): pending writes fail, the reader sees EOF."""
        if not self.dropped:
            self.dropped = True
            self.writer.transport.abort()

    def is_dropped(self) -> bool:
        return self.dropped

    async def send(self, msg: Mapping[str, Any]) -> None:
        if self.dropped:
            return
        if self.waiting >= MAX_QUEUED_SENDS:
            self.drop()
            return
        self.waiting += 1
        try:
            async with self.lock:
                if self.is_dropped():  # dropped while this send waited for the lock
                    return
                try:
                    self.writer.write(self._encode(msg))
                    await self.writer.drain()
                except (ConnectionError, RuntimeError):
                    pass
        finally:
            self.waiting -= 1

    def _encode(self, msg: Mapping[str, Any]) -> bytes:
        """``msg`` as a frame or, when it cannot be sent (too big, a value msgpack cannot
        encode), an error frame saying so: one bad message never costs the connection its
        later replies."""
        try:
            return protocol.encode_frame(msg, max_size=self.max_frame)
        except protocol.ProtocolError as exc:  # our reply is too big: say so instead
            code, text = exc.code, exc.message
        except Exception as exc:  # msgpack raises several unrelated classes
            code, text = protocol.E_INTERNAL, f"reply could not be encoded: {type(exc).__name__}: {exc}"
        request_id = msg.get("id")
        try:
            return protocol.encode_frame(protocol.error_message(code, text, request_id))
        except Exception:  # the id itself cannot be encoded
            safe = text.encode("ascii", "backslashreplace").decode("ascii")
            return protocol.encode_frame(protocol.error_message(code, safe))


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
    ) -> None:
        self.workspace = workspace.resolve()
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
        self.results: dict[str, dict[str, Any]] = {}
        self.clients: set[_Conn] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready = threading.Event()
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="warp-harness-job"
        )
        self._server: asyncio.AbstractServer | None = None
        self._watcher: Any = None
        self._pending: dict[Path, asyncio.Future[dict[str, Any]]] = {}
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
            if self.results.pop(display, None) is not None:
                self._broadcast(protocol.message("removed", push=True, path=display))
            return
        for t in targets:
            self.enqueue(t, event_at=event_at, saved=True)

    def enqueue(
        self, path: Path, *, force: bool = False, event_at: float | None = None, saved: bool = False
    ) -> asyncio.Future[dict[str, Any]]:
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
        fut: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self._pending[path] = fut
        self._broadcast(protocol.message("state", push=True, path=self.engine.display(path), state="queued"))
        self.loop.create_task(self._run_job(path, fut, force, event_at or time.perf_counter()))
        return fut

    def _check_job(self, path: Path, force: bool, queued_at: float) -> dict[str, Any]:
        self._started.add(path)  # from here on the file's text may already have been read
        queue_ms = (time.perf_counter() - queued_at) * 1e3
        payload = self.engine.check(path, force=force)
        payload.setdefault("timings", {})["queue_ms"] = queue_ms
        return payload

    async def _run_job(
        self, path: Path, fut: asyncio.Future[dict[str, Any]], force: bool, queued_at: float
    ) -> None:
        assert self.loop is not None
        display = self.engine.display(path)
        self._broadcast(protocol.message("state", push=True, path=display, state="running"))
        try:
            payload = await self.loop.run_in_executor(self._executor, self._check_job, path, force, queued_at)
        except Exception as exc:  # keep serving whatever happened
            record = F.make_record(
                Stage.INTERNAL, F.INTERNAL, Severity.ERROR, display, 1, f"daemon error: {exc!r}"
            )
            record = replace(record, hint=traceback.format_exc()[-2000:])
            payload = {
                "path": display,
                "status": "error",
                "records": [record.to_dict()],
                "trusted": self.trusted,
                "cached": False,
                "kernels": {},
                "repros": [],
            }
        self.jobs_done += 1
        self.results[display] = payload
        if self._pending.get(path) is fut:
            del self._pending[path]
            self._started.discard(path)
        if not fut.done():
            fut.set_result(payload)
        self._broadcast(protocol.message("result", push=True, **payload))
        self._broadcast(protocol.message("state", push=True, path=display, state="done"))
        if path in self._rerun and (self._stop_event is None or not self._stop_event.is_set()):
            self._rerun.discard(path)
            if path.is_file():
                self.enqueue(path, event_at=time.perf_counter())

    def _progress_from_thread(self, msg: dict[str, Any]) -> None:
        if self.loop is None or self.loop.is_closed():
            return
        fields = {
            k: msg.get(k) for k in ("stage", "kernel", "device", "size", "seed", "edge_case") if k in msg
        }
        push = protocol.message("progress", push=True, **fields)
        self.loop.call_soon_threadsafe(self._broadcast, push)

    def _broadcast(self, msg: dict[str, Any]) -> None:
        for conn in list(self.clients):
            if conn.subscribed and not conn.dropped:
                task = asyncio.ensure_future(conn.send(msg))
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)

    # ----------------------------------------------------------------- clients
    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Conn(writer, self.max_frame)
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

    async def _handle(self, conn: _Conn, msg: dict[str, Any]) -> None:
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

    def _path_field(self, msg: dict[str, Any]) -> Path:
        raw = msg.get("path")
        if not isinstance(raw, str) or not raw:
            raise protocol.ProtocolError(protocol.E_BAD_REQUEST, "`path` must be a non-empty string")
        path = Path(raw)
        path = (path if path.is_absolute() else self.workspace / path).resolve()
        if not path.is_relative_to(self.workspace):
            raise protocol.ProtocolError(
                protocol.E_BAD_REQUEST, f"{raw} is outside the workspace {self.workspace}"
            )
        if not path.is_file():
            raise protocol.ProtocolError(protocol.E_BAD_REQUEST, f"{raw}: no such file")
        return path

    async def _dispatch(self, conn: _Conn, msg: dict[str, Any]) -> dict[str, Any] | None:
        version = msg.get("v", protocol.PROTOCOL_VERSION)
        if type(version) is not int or version not in protocol.SUPPORTED_VERSIONS:  # not True, not 1.0
            raise protocol.ProtocolError(
                protocol.E_VERSION,
                f"protocol version {version!r} is not supported; this daemon speaks "
                f"{list(protocol.SUPPORTED_VERSIONS)}",
            )
        kind = msg["type"]
        if kind == "hello":
            client = msg.get("client")
            conn.client = str(client) if client is not None else None
            if "subscribe" in msg:
                conn.subscribed = bool(msg["subscribe"])
            return protocol.message(
                "welcome",
                server=SERVER_NAME,
                version=harness_version(),
                protocol=protocol.PROTOCOL_VERSION,
                supported=list(protocol.SUPPORTED_VERSIONS),
                workspace=str(self.workspace),
                trusted=self.trusted,
                max_frame=self.max_frame,
                capabilities=[
                    "check",
                    "results",
                    "status",
                    "subscribe",
                    "push:result",
                    "push:progress",
                    "push:state",
                    "push:removed",
                ],
            )
        if kind == "ping":
            return protocol.message("pong")
        if kind == "subscribe":
            enabled = msg.get("enabled", True)
            if not isinstance(enabled, bool):
                raise protocol.ProtocolError(protocol.E_BAD_REQUEST, "`enabled` must be true or false")
            conn.subscribed = enabled
            return protocol.message("ok")
        if kind == "status":
            sup = self.engine.supervisor
            stats = self.engine.cache.stats
            return protocol.message(
                "status",
                workspace=str(self.workspace),
                trusted=self.trusted,
                clients=len(self.clients),
                clients_dropped=self.clients_dropped,
                queued=[self.engine.display(p) for p, f in self._pending.items() if not f.done()],
                jobs_done=self.jobs_done,
                errors_replied=self.errors_replied,
                worker=sup.status() if sup else None,
                cache={"hits": stats.hits, "misses": stats.misses, "discarded": stats.discarded},
                kernel_cache=self.engine.prune_report.to_dict() if self.engine.prune_report else None,
                options=self.options.to_dict(),
            )
        if kind == "check":
            path = self._path_field(msg)
            force = bool(msg.get("force", False))
            fut = self.enqueue(path, force=force)
            if msg.get("wait", True) is False:
                return protocol.message("queued", path=self.engine.display(path))
            payload = await asyncio.shield(fut)
            return protocol.message("result", **payload)
        if kind == "results":
            raw = msg.get("path")
            if raw is None:
                return protocol.message("results", results=list(self.results.values()))
            display = self.engine.display(self._path_field(msg))
            found = self.results.get(display)
            return protocol.message("results", results=[found] if found else [])
        if kind == "shutdown":
            return protocol.message("ok")
        raise protocol.ProtocolError(protocol.E_UNKNOWN_TYPE, f"unknown message type {kind!r}")


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
