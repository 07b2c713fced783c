"""The ``ray`` executor: the dynamic tier of one job on a Ray cluster's worker.

What travels: a content-addressed snapshot of the workspace (a zip of its files, made by the
driver, put once per content into Ray's object store and fetched by each node that runs a job)
and the job (the module's workspace-relative path, the kernel it validates, the steps, the
runtime options with its one device, the text's hash). A module's check is one job per (kernel,
device) (job_parts.plan_parts), merged back on the driver into the result one whole-module job
gives (job_parts.merge_parts). The snapshot holds no hidden file and nothing git ignores
(snapshot_files.select_files); the driver says in one line on stderr what it sends. On the
cluster a ``JobRunner`` actor per slot unpacks the snapshot into a private folder (runner_root:
checked at every use, replaced when another user took its name) and, before every job, checks
that folder and the unpacked files against their digests (snapshot_intact), then runs the job
through the same ``Supervisor`` as a local run: the same sandboxed worker subprocess, the same
time and memory limits, the same verdict worker, kept warm from job to job; the runners of a
node share its kernel cache (kernel_cache.NODE_CACHE_ENV). The ``WorkerResult`` comes back as
its dict, with the private folder's paths turned back into the driver's, and the driver does the
rest (static tier, result cache, failure library, reports), so the records are a local run's.

Nothing is read from a shared file system. A job that validates or benchmarks on CUDA asks Ray
for a whole GPU (``num_gpus=1``), so no two timings share one (on a cluster with no GPU it is
not submitted: WHD070 at once, not a wait until its timeout); the rest asks for one CPU. A
runner lost mid-job (its process or node died) is replaced and the job retried once (actors with
``max_restarts=0``, so the retry is ours to count); a second loss is a WHD070 infrastructure
record, never a kernel's verdict, never cached. The snapshot's module is imported only by the
Supervisor's worker on the node, never by the runner itself.

Ray is optional (``pip install 'warp-harness[ray]'``): this module imports it only when used.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import io
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import zipfile
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warp_harness.daemon import findings as F
from warp_harness.daemon import kernel_cache
from warp_harness.daemon.job_parts import JobPart, merge_parts, plan_parts
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step, steps_from_wire
from warp_harness.daemon.private_temp import FolderUnusable, check_private, private_temp_dir
from warp_harness.daemon.results import WorkerResult
from warp_harness.daemon.snapshot_files import Selection, select_files
from warp_harness.record import Record, Severity, Stage
from warp_harness.wire.statuses import Status

MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024
PACKAGES_KEPT = 4  # snapshots the driver keeps in the object store (tune makes a few)
SUPERVISORS_KEPT = 2  # per runner: a runner serving jobs of two option sets keeps both warm
log = logging.getLogger(__name__)
# how long the driver waits for a job beyond the job's own budget before calling it lost
GET_MARGIN_S = 600.0


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached: a usage problem (exit 2)."""


class SnapshotError(RuntimeError):
    pass


def _snapshot_files(workspace: Path) -> list[Path]:
    """The workspace's files that travel (snapshot_files.select_files: no hidden file, nothing
    git ignores, no build output or virtual environment, nothing over MAX_FILE_BYTES)."""
    return select_files(workspace).files


def build_snapshot(
    workspace: Path, must_have: Path | None = None, selection: Selection | None = None
) -> tuple[bytes, str]:
    """(zip of the workspace's files, its SHA-256). Deterministic: the same files give the same
    bytes, so the same content is uploaded once. ``must_have``: a file that travels even where
    the rules above would leave it out (the module of the job)."""
    blob, digest, _count, _size = _build(workspace, must_have, selection)
    return blob, digest


def _build(
    workspace: Path, must_have: Path | None, selection: Selection | None
) -> tuple[bytes, str, int, int]:
    """build_snapshot, and how many files and bytes (uncompressed) it holds."""
    workspace = workspace.resolve()
    chosen = selection.files if selection is not None else _snapshot_files(workspace)
    files = {p.relative_to(workspace).as_posix(): p for p in chosen}
    if must_have is not None:
        files.setdefault(must_have.resolve().relative_to(workspace).as_posix(), must_have)
    buffer = io.BytesIO()
    total = count = 0
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name in sorted(files):
            try:
                data = files[name].read_bytes()
            except OSError:
                continue
            total += len(data)
            count += 1
            if total > MAX_SNAPSHOT_BYTES:
                raise SnapshotError(
                    f"the workspace's files exceed {MAX_SNAPSHOT_BYTES >> 20} MiB; "
                    "move data sets out of it or into a hidden folder"
                )
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    blob = buffer.getvalue()
    return blob, hashlib.sha256(blob).hexdigest(), count, total


def snapshot_line(selection: Selection, count: int, size: int, packed: int, digest: str) -> str:
    """What a snapshot sends, in one line: files, bytes, what was left out and why."""
    return (
        f"warp-harness: the workspace snapshot sent to the Ray cluster: {count} files, {size:,} bytes "
        f"({packed:,} compressed, sha256 {digest[:12]}); left out: {selection.left_out()} "
        f"(what git ignores, from {selection.ignore_source})"
    )


def unpack_snapshot(blob: bytes, digest: str, into: Path) -> dict[str, str]:
    """Unpack into ``into`` (made ``0700``; files created new, never through a link); the
    SHA-256 of every file unpacked, by its relative path (what `snapshot_intact` checks)."""
    if hashlib.sha256(blob).hexdigest() != digest:
        raise SnapshotError("the workspace snapshot does not match its hash")
    into.mkdir(mode=0o700, parents=True, exist_ok=True)
    into = into.resolve()
    manifest: dict[str, str] = {}
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        for info in zf.infolist():
            target = (into / info.filename).resolve()
            if not target.is_relative_to(into) or info.is_dir():
                continue
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            data = zf.read(info)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            manifest[target.relative_to(into).as_posix()] = hashlib.sha256(data).hexdigest()
    return manifest


def snapshot_intact(folder: Path, workspace: Path, manifest: dict[str, str]) -> str | None:
    """Why the snapshot unpacked in ``folder/workspace`` can no longer be run from (None: it can).

    ``folder`` and the root it is in must still be private folders of this user (no link, no
    one else may enter), every folder below a real folder of this user and no link anywhere, and
    every file of the snapshot a regular file with the content it was unpacked with. Files a job
    wrote beside them (``__pycache__``) may stay: no one else can reach into ``folder``."""
    try:
        check_private(folder.parent)
        check_private(folder)
    except FolderUnusable as exc:
        return str(exc)
    for here, dirs, files in os.walk(workspace, onerror=_raise):
        st = os.lstat(here)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            return f"{here} is not a folder of this user"
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(here, name)):
                return f"{os.path.join(here, name)} is a link"
    for name, sha in manifest.items():
        try:
            fd = os.open(workspace / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            return f"{name}: {exc.strerror or exc}"
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return f"{name} is not a file of this user"
            if hashlib.sha256(fh.read()).hexdigest() != sha:
                return f"{name} changed since it was unpacked"
    return None


def _raise(exc: OSError) -> None:
    raise exc


def _relocate(value: Any, remote: str, local: str) -> Any:
    """Every string naming the job's private folder names the driver's workspace instead."""
    if isinstance(value, str):
        return value.replace(remote, local)
    if isinstance(value, dict):
        return {k: _relocate(v, remote, local) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_relocate(v, remote, local) for v in value]
    return value


def runner_root() -> Path:
    """The runners' folder on this node, ``$TMPDIR/warp-harness-ray-<uid>``: private to this
    user and checked at every call; when another user took that name, a private folder of an
    unpredictable name recorded in the user's cache folder, the same for every runner of the
    node (private_temp.private_temp_dir). Each runner unpacks its snapshot into a folder of its
    own in it, named by its process id: a runner killed mid-job leaves its folder, and the next
    runner on the node removes it."""
    return private_temp_dir(f"warp-harness-ray-{os.getuid()}")


def _sweep_orphans(root: Path) -> None:
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for entry in entries:
        pid = entry.name.split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not Path("/proc/self").exists():
            continue
        shutil.rmtree(entry, ignore_errors=True)


def _versions() -> dict[str, str]:
    import warp_harness
    from warp_harness.daemon.cache import warp_version

    return {"warp-harness": warp_harness.__version__, "warp-lang": warp_version()}


def _node_cache(root: Path) -> Path | None:
    """The kernel cache the runners of this user share on this node (``root/kernels``), None
    when it is not this user's private folder (kernel_cache.private_folder)."""
    return kernel_cache.private_folder(root / "kernels")


# capb (#31): captured launches replayed (and timed) on the cluster. The driver prepared the launch's
# inputs as .npy files in a folder of its own (daemon/captured/replay.py, benchmark.py): they travel with
# the job, the runner's Supervisor runs the worker's `replay` job on them in a private folder, and the
# arrays it leaves there travel back; the driver judges them (it runs no workspace code), so the
# records are a local replay's.
_REPLAY_IN = re.compile(r"in-[0-9a-f]{1,32}-\d{1,7}\.npy")
_REPLAY_OUT = re.compile(r"out-[0-9a-f]{1,32}-\d{1,4}\.npy")
MAX_REPLAY_BYTES = MAX_SNAPSHOT_BYTES


def _folder_files(folder: Path, pattern: re.Pattern[str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for entry in sorted(folder.iterdir()):
        if not pattern.fullmatch(entry.name) or entry.is_symlink() or not entry.is_file():
            continue
        data = entry.read_bytes()
        total += len(data)
        if total > MAX_REPLAY_BYTES:
            raise SnapshotError(f"a replay job's arrays exceed {MAX_REPLAY_BYTES >> 20} MiB")
        files[entry.name] = data
    return files


def _write_files(folder: Path, files: dict[str, bytes], pattern: re.Pattern[str]) -> None:
    for name, data in files.items():
        if not pattern.fullmatch(name):
            raise SnapshotError(f"a replay file named {name!r}")
        fd = os.open(
            folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600
        )
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def _from_any_runner(value: Any, local: str) -> Any:
    """``value`` with the workspace folder of any runner of this node naming the driver's instead: a
    debug build from the node's kernel cache names the folder of the runner that compiled it (a bounds
    assertion's file), another snapshot of the same text (the cache is keyed by content)."""
    try:
        root = str(runner_root())
    except FolderUnusable:
        return value
    folder = re.compile(re.escape(root) + r"/\d+-[A-Za-z0-9_]+/workspace(?=/)")
    if isinstance(value, str):
        return folder.sub(lambda _: local, value)
    if isinstance(value, dict):
        return {k: _from_any_runner(v, local) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_from_any_runner(v, local) for v in value]
    return value


def _run_replay(supervisor: Any, workspace: Path, job: dict[str, Any]) -> dict[str, Any]:
    """On the runner: the worker's replay job on the inputs that came with ``job``; the outcome of
    the call and the arrays the worker left."""
    folder = Path(tempfile.mkdtemp(prefix="replay-", dir=workspace.parent))
    try:
        _write_files(folder, job["files"], _REPLAY_IN)
        msg = {**job["message"], "folder": str(folder), "path": str(workspace / job["path"])}
        msg["workspace"] = str(workspace)
        with supervisor._lock:
            outcome = supervisor._call(msg, None)
        return {
            "replay": {
                "kind": outcome.kind,
                "result": outcome.result,
                "returncode": outcome.returncode,
                "progress": outcome.progress,
                "output": outcome.output,
                "elapsed_s": outcome.elapsed_s,
            },
            "files": _folder_files(folder, _REPLAY_OUT),
        }
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class JobRunner:
    """A Ray actor, one per slot (a CPU, or a GPU for CUDA jobs): the snapshot it last unpacked,
    in a private folder, and a ``Supervisor`` on it whose workers stay warm from job to job (Warp
    imported), as a local run's do; at most SUPERVISORS_KEPT of them, one per set of runtime
    options. A new snapshot: a fresh folder and fresh ``Supervisor``s.

    Builds go to the node's kernel cache, which every runner of this user on the node shares
    (``runner_root()/kernels``, through the worker's environment: kernel_cache.NODE_CACHE_ENV):
    a module built by one runner is a cache hit for the next, whatever snapshot it came in."""

    def __init__(self) -> None:
        self._digest: str | None = None
        self._folder: Path | None = None
        self._workspace: Path | None = None
        self._manifest: dict[str, str] = {}
        self._supervisors: OrderedDict[str, Any] = OrderedDict()
        self._pruned = False
        try:
            root: Path | None = runner_root()
        except FolderUnusable:
            root = None  # the first job says why
        shared = None
        if root is not None:
            _sweep_orphans(root)
            shared = _node_cache(root)
        if shared is not None:
            os.environ[kernel_cache.NODE_CACHE_ENV] = str(shared)
        else:
            os.environ.pop(kernel_cache.NODE_CACHE_ENV, None)

    def pid(self) -> int:
        return os.getpid()

    def run(self, package: list[Any], digest: str, job: dict[str, Any]) -> dict[str, Any]:
        """Run one job; the result as the driver's paths name it. ``package``: [the snapshot's
        object ref], fetched only when this runner does not hold that snapshot already."""
        mine = _versions()
        if job.get("versions") != mine:
            return {
                "infrastructure": f"this node has {mine}, the driver {job.get('versions')}: "
                "install the same warp-harness and warp-lang on every node (the result cache "
                "keys on them)"
            }
        why = "" if digest == self._digest else "a new snapshot"
        if not why and self._folder is not None and self._workspace is not None:
            why = snapshot_intact(self._folder, self._workspace, self._manifest) or ""
            if why:
                log.warning(
                    "warp-harness: the unpacked snapshot cannot be run from again (%s): unpacked afresh", why
                )
        if why or self._workspace is None:
            import ray

            self.shutdown()
            self._folder = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=runner_root())).resolve()
            workspace = self._folder / "workspace"
            self._manifest = unpack_snapshot(ray.get(package[0]), digest, workspace)
            self._workspace, self._digest = workspace, digest
        workspace = self._workspace
        supervisor = self._supervisor(workspace, job["options"])
        if job["kind"] == "replay":  # capb (#31): a captured launch's replay or timing job
            replayed: dict[str, Any] = _relocate(
                _run_replay(supervisor, workspace, job), str(workspace), job["workspace"]
            )
            relocated_replay: dict[str, Any] = _from_any_runner(replayed, job["workspace"])
            return relocated_replay
        if job["kind"] == "check":
            result = supervisor.check(
                workspace / job["path"],
                display_path=job["display"],
                steps=steps_from_wire(job["steps"]),
                source_sha256=job.get("source_sha256"),
                kernels=job.get("kernels"),
                seed=job.get("seed"),
            )
            out: dict[str, Any] = {"result": result.to_dict()}
        else:
            status, records = supervisor.run_case(job["case"], mode=job.get("mode"), probe=job["probe"])
            out = {"status": status, "records": [r.to_dict() for r in records]}
        relocated: dict[str, Any] = _relocate(out, str(workspace), job["workspace"])
        return relocated

    def _supervisor(self, workspace: Path, wire: dict[str, Any]) -> Any:
        """The warm ``Supervisor`` of these runtime options (made, and the node's kernel cache
        pruned once, when there is none)."""
        from warp_harness.daemon.supervisor import Supervisor

        key = json.dumps(wire, sort_keys=True, default=str)
        supervisor = self._supervisors.get(key)
        if supervisor is None:
            options = RuntimeOptions.from_dict(wire)
            shared = os.environ.get(kernel_cache.NODE_CACHE_ENV)
            if shared and not self._pruned:
                self._pruned = True
                kernel_cache.prune_folder(
                    Path(shared), options.kernel_cache_keep, options.kernel_cache_max_mb * 1024 * 1024
                )
            supervisor = self._supervisors[key] = Supervisor(workspace, options, warmup=False)
            while len(self._supervisors) > SUPERVISORS_KEPT:
                self._supervisors.popitem(last=False)[1].close()
        self._supervisors.move_to_end(key)
        return supervisor

    def shutdown(self) -> None:
        for supervisor in self._supervisors.values():
            supervisor.close()
        self._supervisors.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self._folder = self._workspace = self._digest = None
        self._manifest = {}


def _lost_errors() -> tuple[type[BaseException], ...]:
    """Ray's ways of saying the process or node that ran a task is gone (not the task's fault)."""
    import ray.exceptions as rex

    return (
        rex.WorkerCrashedError,
        rex.NodeDiedError,
        rex.LocalRayletDiedError,
        rex.ObjectLostError,
        rex.RayActorError,
        rex.OutOfMemoryError,
    )


def connect(address: str | None) -> None:
    """Connect this process to the cluster at ``address`` (None: RAY_ADDRESS, else a local
    cluster already running); once per process. Ray's token authentication stays as the cluster
    has it (the token comes from the user's ~/.ray/auth_token or RAY_AUTH_TOKEN[_PATH])."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--executor ray needs Ray: pip install 'warp-harness[ray]'") from None
    if ray.is_initialized():
        return
    target = address or os.environ.get("RAY_ADDRESS") or "auto"
    _probe(target)
    try:
        ray.init(
            address=target,
            log_to_driver=False,
            logging_level=logging.WARNING,
            namespace="warp-harness",
        )
    except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
        raise RayUnavailable(
            f"cannot reach the Ray cluster at {address or 'auto'}: {exc}{_token_hint(str(exc))}"
        ) from None


def _token_hint(error: str) -> str:
    """What to say of Ray's token authentication when a connection fails: a cluster started with it
    refuses a driver without the token, after many warnings that never name it."""
    auth = any(word in error.lower() for word in ("auth", "token", "unauthenticated", "permission"))
    lead = (
        "the cluster refused this process's credentials"
        if auth
        else "if the cluster uses token authentication"
    )
    have = "RAY_AUTH_TOKEN" in os.environ or "RAY_AUTH_TOKEN_PATH" in os.environ
    where = (
        "RAY_AUTH_TOKEN / RAY_AUTH_TOKEN_PATH are set: check they hold the cluster's token"
        if have
        else (
            "give this process the cluster's token: ~/.ray/auth_token, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH"
        )
    )
    return f" ({lead}: {where})"


class _RunnerPool:
    """The runners of one resource shape; at most ``limit`` of them, each running one job at a
    time. A runner whose process died is dropped; the next job gets a fresh one."""

    def __init__(self, actor_class: Any, resources: dict[str, float], limit: int) -> None:
        self._actor_class = actor_class
        self._resources = resources
        self.limit = max(1, limit)
        self._idle: list[Any] = []
        self._busy: set[Any] = set()
        self._ready = threading.Condition()

    def acquire(self) -> Any:
        with self._ready:
            while not self._idle and len(self._busy) >= self.limit:
                self._ready.wait()
            runner = (
                self._idle.pop()
                if self._idle
                else self._actor_class.options(**self._resources, max_restarts=0, max_task_retries=0).remote()
            )
            self._busy.add(runner)
            return runner

    def release(self, runner: Any, *, dead: bool = False) -> None:
        with self._ready:
            self._busy.discard(runner)
            if dead:
                _kill(runner)
            else:
                self._idle.append(runner)
            self._ready.notify()

    def busy(self) -> list[Any]:
        with self._ready:
            return list(self._busy)

    def close(self) -> None:
        with self._ready:
            runners, self._idle = [*self._idle, *self._busy], []
            self._busy.clear()
        import ray

        done = [r.shutdown.remote() for r in runners]  # their Supervisors' workers stop cleanly
        try:
            ray.wait(done, num_returns=len(done), timeout=30)
        except ray.exceptions.RayError:
            pass
        for runner in runners:
            _kill(runner)


def _kill(runner: Any) -> None:
    import ray

    try:
        ray.kill(runner, no_restart=True)
    except (ValueError, ray.exceptions.RayError):
        pass


def _probe(address: str, timeout_s: float = 10.0) -> None:
    """Fail fast on a ``host:port`` nothing listens at: Ray itself retries for minutes."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", a ray:// client address: Ray's own checks
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(f"cannot reach the Ray cluster at {address}: {exc}") from None


class RayExecutor:
    """Runs check and case jobs of one (trusted) workspace on a Ray cluster; thread-safe: several
    threads may wait on their jobs at once (``engines.check_many``), each on a runner of its own.

    A module's check is one job per (kernel, device) when its kernels run (job_parts.plan_parts),
    submitted together and merged back into the module's result (job_parts.merge_parts)."""

    def __init__(self, workspace: Path, options: RuntimeOptions, *, address: str | None = None) -> None:
        self.workspace = workspace.resolve()
        self.options = options
        self.address = address
        self.retries = 0  # jobs run a second time after a lost worker
        self.failures = 0  # jobs reported as infrastructure failures
        # every job submitted, in order: (workspace-relative path, kind, kernel or None, device)
        self.jobs: list[tuple[str, str, str | None, str | None]] = []
        self._lock = threading.Lock()
        self._packages: OrderedDict[str, Any] = OrderedDict()  # digest -> ObjectRef
        self._snapshot_key: tuple[Any, ...] | None = None
        self._snapshot: tuple[bytes, str] | None = None
        self._pools: dict[tuple[tuple[str, float], ...], _RunnerPool] = {}
        self._closing = False
        connect(address)
        import ray

        self._actor_class = ray.remote(JobRunner)

    # ------------------------------------------------------------ the Supervisor's lifecycle
    def start(self) -> None:
        """Nothing to start: runners start with their first job."""

    def abort(self) -> None:
        """Stop now: the runners of jobs in flight are killed (those jobs end as infrastructure
        failures: never a verdict, never cached)."""
        self._closing = True
        with self._lock:
            pools = list(self._pools.values())
        for pool in pools:
            for runner in pool.busy():
                _kill(runner)

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            self._packages.clear()
            self._snapshot = self._snapshot_key = None
        for pool in pools:
            pool.close()

    def _pool(self, resources: dict[str, float]) -> _RunnerPool:
        key = tuple(sorted(resources.items()))
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                limit = self._total("GPU" if "num_gpus" in resources else "CPU")
                pool = self._pools[key] = _RunnerPool(self._actor_class, resources, limit)
            return pool

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def status(self) -> dict[str, Any]:
        return {
            "executor": "ray",
            "address": self.address,
            "retries": self.retries,
            "failures": self.failures,
            "jobs": len(self.jobs),
        }

    def resources(self, steps: tuple[Step, ...], options: RuntimeOptions | None = None) -> dict[str, float]:
        """A whole GPU for a job that launches kernels on CUDA; one CPU otherwise."""
        opts = options or self.options
        runs = (Step.VALIDATE in steps and opts.validate) or (Step.BENCH in steps and opts.bench)
        if runs and any(d.startswith("cuda") for d in opts.devices):
            return {"num_gpus": 1, "num_cpus": 1}
        return {"num_cpus": 1}

    @staticmethod
    def _total(kind: str) -> int:
        """How many of ``kind`` (GPU, CPU) the cluster has now."""
        import ray

        available: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        return int(available.get(kind, 0))

    def slots(self, steps: tuple[Step, ...] = DEFAULT_STEPS) -> int:
        """Jobs the cluster runs at once: its GPUs for CUDA jobs, its CPUs for the rest."""
        kind = "GPU" if "num_gpus" in self.resources(steps) else "CPU"
        return max(1, self._total(kind))

    # ------------------------------------------------------------ jobs
    def check(
        self,
        path: Path,
        *,
        display_path: str | None = None,
        steps: tuple[Step, ...] = DEFAULT_STEPS,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
        options: RuntimeOptions | None = None,
        source_sha256: str | None = None,
    ) -> WorkerResult:
        opts = options or self.options
        display = display_path or str(path)
        parts = plan_parts(path, steps, opts)
        # one seed for every job of the module, as one whole-module job would use
        seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31)

        def one(part: JobPart) -> WorkerResult:
            part_opts = part.options(opts)
            job = {
                "kind": "check",
                "display": display,
                "steps": [s.value for s in steps],
                "options": part_opts.to_dict(),
                "source_sha256": source_sha256,
                "kernels": part.selection,
                "seed": seed,
            }
            out = self._submit(path, job, steps, part_opts, on_progress, part)
            if "result" in out:
                return WorkerResult.from_dict(out["result"])
            return WorkerResult(
                status=Status.INFRASTRUCTURE,
                path=display,
                records=[self._infrastructure_record(display, out, part if len(parts) > 1 else None)],
                notes={"transient": True},
                cacheable=False,
            )

        t0 = time.monotonic()
        if len(parts) == 1:
            results = [one(parts[0])]
        else:
            with concurrent.futures.ThreadPoolExecutor(
                max_workers=len(parts), thread_name_prefix="warp-harness-part"
            ) as pool:
                results = list(pool.map(one, parts))
        merged = merge_parts(parts, results, display)
        merged.elapsed_ms = (time.monotonic() - t0) * 1e3
        return merged

    def run_case(
        self,
        case: dict[str, Any],
        *,
        mode: str | None = None,
        probe: bool = False,
        on_progress: Callable[[dict[str, Any]], None] | None = None,
    ) -> tuple[str, list[Record]]:
        path = self.workspace / str(case.get("path"))
        job = {"kind": "case", "case": case, "mode": mode, "probe": probe, "options": self.options.to_dict()}
        steps = (Step.VALIDATE,)
        device = str(case.get("device") or "cpu")
        part = JobPart(str(case.get("kernel")), None, device)
        opts = self.options.merged({"devices": [device]})  # the case's device decides the resources
        out = self._submit(path, job, steps, opts, on_progress, part)
        if "status" in out:
            return str(out["status"]), [Record.from_dict(r) for r in out["records"]]
        return "infrastructure", [self._infrastructure_record(str(case.get("path")), out)]

    def replay_call(self, msg: dict[str, Any]) -> Any:
        """capb (#31): one replay job (daemon/captured/replay.Call) on the cluster: the inputs in
        ``msg["folder"]`` travel with it, the arrays the worker left come back into that folder."""
        from warp_harness.daemon.worker_process import CallOutcome

        folder = Path(str(msg["folder"]))
        path = Path(str(msg["path"]))
        launches = [x for k in msg.get("kernels") or [] for x in k.get("launches") or []]
        devices = sorted({str(x.get("device") or "cpu") for x in launches}) or ["cpu"]
        # a CUDA launch asks for a GPU where the cluster has one; elsewhere the worker replays it on the CPU
        if not (any(d.startswith("cuda") for d in devices) and self._total("GPU") >= 1):
            devices = ["cpu"]
        opts = RuntimeOptions.from_dict(msg.get("options") or {}).merged({"devices": devices})
        try:
            files = _folder_files(folder, _REPLAY_IN)
        except (OSError, SnapshotError) as exc:
            return CallOutcome(kind="infrastructure", output=f"the replay's inputs did not travel: {exc}")
        message = {k: v for k, v in msg.items() if k not in ("folder", "path", "workspace")}
        job = {"kind": "replay", "message": message, "files": files, "options": opts.to_dict()}
        kernel = str((msg.get("kernels") or [{}])[0].get("name") or "")
        part = JobPart(kernel, None, devices[0])
        out = self._submit(path, job, (Step.VALIDATE,), opts, None, part)
        if "replay" not in out:
            return CallOutcome(kind="infrastructure", output=str(out.get("infrastructure")))
        try:
            _write_files(folder, out.get("files") or {}, _REPLAY_OUT)
        except (OSError, SnapshotError) as exc:
            return CallOutcome(kind="infrastructure", output=f"the replay's outputs did not come back: {exc}")
        r = out["replay"]
        return CallOutcome(
            kind=str(r["kind"]),
            result=r.get("result"),
            returncode=r.get("returncode"),
            progress=dict(r.get("progress") or {}),
            output=str(r.get("output") or ""),
            elapsed_s=float(r.get("elapsed_s") or 0.0),
        )

    def _submit(
        self,
        path: Path,
        job: dict[str, Any],
        steps: tuple[Step, ...],
        opts: RuntimeOptions,
        on_progress: Callable[[dict[str, Any]], None] | None,
        part: JobPart | None = None,
    ) -> dict[str, Any]:
        """The runner's answer; ``{"infrastructure": why, "lost": ...}`` when there is none."""
        import ray

        try:
            rel = path.resolve().relative_to(self.workspace).as_posix()
            blob_ref, digest = self._package(path)
        except ValueError:
            return {"infrastructure": f"{path} is outside the workspace {self.workspace}: it does not travel"}
        except (OSError, SnapshotError) as exc:
            return {"infrastructure": f"the workspace snapshot failed: {exc}"}
        resources = self.resources(steps, opts)
        if "num_gpus" in resources and self._total("GPU") < 1:
            # Ray would keep the job waiting for a GPU that never comes (until timeout_s x 2 + 10 min)
            with self._lock:
                self.failures += 1
            return {
                "infrastructure": "the cluster has no GPU (ray.cluster_resources() lists none) and "
                f"the job runs kernels on {', '.join(opts.devices)}",
                "no_gpu": True,
            }
        job = {**job, "path": rel, "workspace": str(self.workspace), "versions": _versions()}
        wait_s = opts.timeout_s * 2 + GET_MARGIN_S  # the job's own budget is enforced on the worker
        pool = self._pool(resources)
        with self._lock:
            kernel = part.kernel if part is not None and (part.owns_one or job["kind"] == "case") else None
            self.jobs.append((rel, str(job["kind"]), kernel, part.device if part is not None else None))
        why, lost = "", False
        for attempt in (1, 2):
            if self._closing:
                why = "stopped before the job ran"
                break
            if on_progress is not None:
                stage = "remote" if attempt == 1 else "remote-retry"
                on_progress({"stage": stage, "path": job.get("display")})
            runner = pool.acquire()
            dead = False
            try:
                answer: dict[str, Any] = ray.get(runner.run.remote([blob_ref], digest, job), timeout=wait_s)
                return answer
            except _lost_errors() as exc:
                dead = True
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                why, lost = f"{type(exc).__name__}: {first}", True
                if attempt == 1:
                    with self._lock:
                        self.retries += 1
            except ray.exceptions.GetTimeoutError:
                dead = True
                why, lost = f"no answer from the cluster within {wait_s:.0f} s", True
                break
            except ray.exceptions.RayError as exc:  # the runner raised: the harness's failure
                dead = True
                last = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
                why, lost = f"{type(exc).__name__}: {last}", False
                break
            finally:
                pool.release(runner, dead=dead)
        with self._lock:
            self.failures += 1
        return {"infrastructure": why, "lost": lost}

    def _package(self, path: Path) -> tuple[Any, str]:
        """(object ref of the snapshot holding ``path``, its digest): rebuilt only when a file's
        size or time changed, uploaded only when its content is new."""
        import ray

        path.resolve().relative_to(self.workspace)  # ValueError outside
        with self._lock:
            selection = select_files(self.workspace)
            key = tuple(
                (str(p), st.st_size, st.st_mtime_ns) for p in (*selection.files, path) if (st := p.stat())
            )
            if self._snapshot is None or key != self._snapshot_key:
                blob, digest, count, size = _build(self.workspace, path, selection)
                self._snapshot, self._snapshot_key = (blob, digest), key
                if digest not in self._packages:
                    self.announce(snapshot_line(selection, count, size, len(blob), digest))
            blob, digest = self._snapshot
            if digest not in self._packages:
                self._packages[digest] = ray.put(blob)
                while len(self._packages) > PACKAGES_KEPT:
                    self._packages.popitem(last=False)
            self._packages.move_to_end(digest)
            return self._packages[digest], digest

    @staticmethod
    def announce(line: str) -> None:
        """Say what leaves the machine: one line on stderr (and in the log) per new snapshot."""
        log.info("%s", line)
        print(line, file=sys.stderr, flush=True)

    @staticmethod
    def _infrastructure_record(display: str, out: dict[str, Any], part: JobPart | None = None) -> Record:
        why = str(out.get("infrastructure"))
        job = f"the job of {part.label()}" if part is not None else "the job"
        if out.get("no_gpu"):  # the same for every kernel's job of the device: one record (merge_parts)
            where = f" on {part.device}" if part is not None and part.device else ""
            return F.make_record(
                Stage.INTERNAL,
                F.INFRASTRUCTURE,
                Severity.ERROR,
                display,
                1,
                f"the module's jobs{where} were not submitted: no verdict on its kernels there ({why})",
                hint="add GPU nodes to the cluster (`ray start --num-gpus N`, a KubeRay GPU worker "
                "group with at least one replica), or run CPU devices only (--device cpu)",
            )
        what = (
            "was lost on the Ray cluster (tried twice)"
            if out.get("lost")
            else "did not run on the Ray cluster"
        )
        return F.make_record(
            Stage.INTERNAL,
            F.INFRASTRUCTURE,
            Severity.ERROR,
            display,
            1,
            f"{job} {what}: no verdict on the kernels ({why})",
            kernel=part.kernel if part is not None and part.owns_one else None,
            hint="re-run; if it repeats, look at the cluster (`ray status`, the worker logs)",
        )
