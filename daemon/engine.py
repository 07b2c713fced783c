"""The job engine: both tiers on one saved file, with the result cache, history and the
failure library (``Engine.check``; one job thread calls it). The dynamic tier goes through
the ``Supervisor`` (daemon/supervisor.py), which drives the worker's pipeline
(daemon/pipeline.py); the static tier is the same engine ``warp-harness check`` runs.

Used by the daemon (daemon/server.py), ``ci``, ``bench`` and ``tune``.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.config import Settings
from warp_harness.daemon import cache as result_cache
from warp_harness.daemon import discovery, feedback, kernel_cache, repros
from warp_harness.daemon import findings as F
from warp_harness.daemon.executor import Executor
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.results import CheckReport, WorkerResult, file_status
from warp_harness.daemon.supervisor import Supervisor
from warp_harness.record import Record, Severity, Stage
from warp_harness.wire.statuses import Status, Tier


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


def static_records(
    path: Path, display: str, overrides: Mapping[str, Any] | None, *, cached: bool = True
) -> list[Record]:
    """The static tier on one file (no code execution), through `check`'s result cache (an unchanged
    file is not analysed again: the daemon's first pass over a workspace `ci` or the last daemon saw);
    [] when the engine is unavailable."""
    try:
        from warp_harness.check_cache import check_alone, shared_cache
    except ImportError:
        return []
    try:
        with discovery.AST_LOCK:  # never two parses at once (see discovery.AST_LOCK)
            cache = shared_cache(warn=_warn) if cached else None
            return list(check_alone(path, overrides, display, cache, keep_lines=False).records)
    except Exception as exc:  # the static tier must never take the daemon down
        return [
            F.make_record(
                Stage.INTERNAL, F.INTERNAL, Severity.WARNING, display, 1, f"static tier failed: {exc!r}"
            )
        ]


def _warn(line: str) -> None:
    import sys

    print(line, file=sys.stderr)


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
        static_records(probe, "probe.py", None, cached=False)  # analysed: the tables loaded


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
    # what runs the dynamic tier (daemon/executor.py): a local Supervisor unless one is given
    supervisor: Executor | None = None
    cache: result_cache.ResultCache = field(init=False)
    history: feedback.History = field(init=False)
    checks: int = 0
    prune_report: kernel_cache.PruneReport | None = None
    # captured launches replayed on a check (daemon/captured/hook.py MODES): "changed" kernels by default
    replay_captures: str = "changed"

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
        self.history.flush(30)  # the streaks pushed are on disk before the daemon's lock goes

    def check(
        self, path: Path, *, force: bool = False, steps: tuple[Step, ...] = DEFAULT_STEPS
    ) -> CheckReport:
        t0 = time.perf_counter()
        path = path.resolve()
        display = self.display(path)
        self.checks += 1
        timings: dict[str, float | None] = {}
        report = CheckReport(path=display, trusted=self.trusted)
        dynamic: list[Record] = []
        static: list[Record] = []
        if not self.trusted:
            static, timings["static_ms"] = _timed_static(path, display, self.overrides)
            dynamic.append(untrusted_record(display))
            report.status = Status.UNTRUSTED
        else:
            key = result_cache.result_key(self.options.to_dict(), steps)
            result, static = self._one_text(path, display, key, force, steps, timings, report)
            dynamic = result.records
            report.status = file_status(result.status, result.records)
            report.kernels = result.kernels
            report.seed = result.seed
            report.module_hash = result.module_hash
            report.devices = result.devices
            if report.cached:
                report.repros = result.repros
            if result.status != Status.STALE:  # replay captured launches (daemon/captured/), never cached
                from warp_harness.daemon.captured.hook import replay_for_engine

                t_replay = time.perf_counter()
                replayed, stored = replay_for_engine(self, path, display)
                timings["capture_replay_ms"] = (time.perf_counter() - t_replay) * 1e3
                dynamic = [*dynamic, *replayed]
                report.repros = [*report.repros, *stored]
            timings = {**result.timings, **timings, "worker_ms": result.worker_ms}
        report.timings = timings
        ordered_static = feedback.order(static)
        ordered_dynamic = feedback.order(dynamic)
        everything = feedback.order([*static, *dynamic])
        t = time.perf_counter()
        streaks = self.history.update(display, everything) if self.record_history else {}
        report.timings["history_ms"] = (time.perf_counter() - t) * 1e3
        tiers = {id(r): Tier.STATIC for r in ordered_static} | {id(r): Tier.DYNAMIC for r in ordered_dynamic}
        report.records = [feedback.reported(r, streaks, tiers.get(id(r), Tier.DYNAMIC)) for r in everything]
        report.elapsed_ms = (time.perf_counter() - t0) * 1e3
        return report

    def _one_text(
        self,
        path: Path,
        display: str,
        key: str,
        force: bool,
        steps: tuple[Step, ...],
        timings: dict[str, float | None],
        report: CheckReport,
    ) -> tuple[WorkerResult, list[Record]]:
        """(worker result, static records) that both describe one text of the file.

        The file is hashed before the tiers run; the worker refuses a file whose text has
        another hash (status ``stale``: it was saved again while the job waited, for a worker
        restart say), and the static tier's read must fall between that hash and a second
        one. A stale attempt is done again with the new text, ``STALE_ATTEMPTS`` times at most."""
        for _attempt in range(self.STALE_ATTEMPTS):
            sha = self.source_sha256(path)
            report.cached = False
            result, static = self._both_tiers(path, display, key, sha, force, steps, timings, report)
            if result.status != Status.STALE and self.source_sha256(path) == sha:
                report.source_sha256 = sha
                return result, static
        report.source_sha256 = None
        record = F.make_record(
            Stage.INTERNAL,
            F.INTERNAL,
            Severity.INFO,
            display,
            1,
            f"the file changed while it was being checked ({self.STALE_ATTEMPTS} times): "
            "the dynamic tier's result was dropped; save again to check it",
        )
        return WorkerResult(status=Status.STALE, path=display, records=[record]), static

    def _both_tiers(
        self,
        path: Path,
        display: str,
        key: str,
        sha: str | None,
        force: bool,
        steps: tuple[Step, ...],
        timings: dict[str, float | None],
        report: CheckReport,
    ) -> tuple[WorkerResult, list[Record]]:
        """Both tiers once on the text whose hash is ``sha`` (None: unknown, not verified)."""
        assert self.supervisor is not None
        t = time.perf_counter()
        stored = None if force else self.cache.lookup(path, key)
        result = WorkerResult.from_dict(stored) if stored is not None else None
        if result is not None and sha is not None and self._dep_sha(result, path) not in (sha, None):
            result = None  # stored for another text than the one just read
        timings["cache_ms"] = (time.perf_counter() - t) * 1e3
        if result is not None:
            report.cached = True
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
        result.repros = self._store_repros(path, result) if result.status != Status.STALE else []
        report.repros = result.repros
        if self.cacheable(result):
            try:
                self.cache.store(path, key, result.to_dict())
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
    def _dep_sha(result: WorkerResult, path: Path) -> str | None:
        """The hash a stored result recorded for ``path`` itself."""
        for dep in result.deps:
            if isinstance(dep, list | tuple) and len(dep) == 2 and dep[0] == str(path):
                return str(dep[1])
        return None

    @staticmethod
    def cacheable(result: WorkerResult) -> bool:
        """Whether a worker's result is the code's verdict, to be stored in the result cache.

        Not when the machine or the harness had a part in it: a transient crash (the worker
        killed from outside or by us, a death while compiling), a failure of the file system
        (``notes.transient``: an OSError such as a full disk or EIO), a build in the kernel
        cache that could not be loaded and was rebuilt (``notes.rebuilt``), or any record of
        an internal error or of a job lost with its machine (infrastructure)."""
        notes = result.notes
        if not result.cacheable or not isinstance(notes, Mapping):
            return False
        if result.status == Status.STALE:  # describes no text the file still holds
            return False
        if notes.get("transient") or notes.get("rebuilt"):
            return False
        return not any(r.rule in (F.INTERNAL, F.INFRASTRUCTURE) for r in result.records)

    def _progress(self, msg: dict[str, Any]) -> None:
        if self.on_progress is not None:
            self.on_progress(msg)

    def _store_repros(self, path: Path, result: WorkerResult) -> list[str]:
        stored: list[str] = []
        for failure in result.failures:
            try:
                file = repros.store(self.workspace, path, failure, self.options.compile_options())
            except (repros.OutsideWorkspaceError, OSError) as exc:
                result.records.append(
                    F.make_record(
                        Stage.INTERNAL,
                        F.INTERNAL,
                        Severity.WARNING,
                        self.display(path),
                        1,
                        f"failing case not stored: {exc}",
                    )
                )
                continue
            stored.append(file.relative_to(self.workspace).as_posix())
        return stored
