"""The result cache: one msgpack file per checked module under ``.warp-harness/results/``.

An entry is valid when its key (runtime options that change a verdict, devices, Warp
version, cache schema) matches and every file the module imported from the workspace
(the module itself, its contract siblings, helper modules with ``@wp.func``) still has
the SHA-256 recorded when the result was computed: a content hash of everything Warp's
module hash and the contract hash depend on, checked without starting the worker.

Writes are atomic (temporary file in the same folder, then rename), so a reader never
sees a half-written file. They are not fsync'ed (8 ms per write on the reference disk, on
every save): after a power loss a file may be empty or truncated, and such a file, like
one that cannot be read, is not msgpack or has the wrong shape, is deleted and rebuilt,
never trusted. The failure library (repros.py) does fsync: its cases are not rebuilt.

A repository can ship its own ``.warp-harness/results``: a planted ``pass`` would be served without
running anything. So a result file is an envelope ``{"schema": 2, "entry": <msgpack bytes>, "tag":
...}`` whose tag is `user_state.sign` over the entry's bytes (a per-user secret, 0600, in the user's
private cache folder): a file without a valid tag was not written by this user's harness and is
ignored and deleted with a one-line note, before its entry is even decoded.

Nothing is stored outside the workspace: every folder of ``.warp-harness`` is checked to
resolve (symlinks included) inside the workspace before a file in it is read, written or
deleted (``state_path``); a ``.warp-harness``, ``results`` ... that is a symlink leading out
is refused (``OutsideWorkspaceError``), never followed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

from warp_harness import user_state
from warp_harness.daemon import protocol
from warp_harness.daemon.pipeline import DEFAULT_STEPS, Step
from warp_harness.daemon.write_behind import LatestWrites
from warp_harness.safe_read import FileTooLargeError, read_regular

SCHEMA = 1
SIGNED_SCHEMA = 2  # the envelope of a result file: {"schema", "entry", "tag"}
TAG_PURPOSE = "wh-result"
HARNESS_STATE = ".warp-harness"
_log = logging.getLogger(__name__)


def state_dir(workspace: Path) -> Path:
    return workspace / HARNESS_STATE


class OutsideWorkspaceError(PermissionError):
    """A state folder (``.warp-harness``, ``.warp-harness/results`` ...) resolves outside the workspace."""


def inside(path: Path, workspace: Path) -> bool:
    """Whether ``path`` resolves (symlinks included) inside ``workspace``."""
    try:
        return path.resolve().is_relative_to(workspace.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def _resolves_inside(path: Path, root: Path) -> bool:
    """``inside`` for a ``root`` already resolved (every state file's path is checked: one
    resolve instead of two)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def state_path(workspace: Path, *parts: str) -> Path:
    """``<workspace>/.warp-harness/<parts...>``, after checking that ``.warp-harness`` and every
    folder below it on the way resolve inside the workspace; OutsideWorkspaceError if one does
    not. The last part is a file name and may itself be a symlink: writes replace it
    (``atomic_write_bytes`` renames over the name), they never write through it."""
    root = workspace.resolve()
    folder = state_dir(root)
    path = folder.joinpath(*parts)
    folders = [folder]
    for part in parts[:-1]:
        folders.append(folders[-1] / part)
    for p in folders:
        try:
            os.lstat(p)  # there, as a folder or a link (dangling too)
        except OSError:
            continue
        if not _resolves_inside(p, root):
            raise OutsideWorkspaceError(
                f"{p} resolves outside the workspace {root}; refusing to store anything there"
            )
    _ensure_state_dir(folder)
    return path


# written once into the state folder, as Ruff does for .ruff_cache: git ignores the folder itself
GITIGNORE = b"# Automatically created by warp-harness.\n*\n"


def _ensure_state_dir(folder: Path) -> None:
    """Create ``.warp-harness`` (that one folder) with a ``.gitignore`` of ``*`` in it; add the
    ``.gitignore`` to a real folder that lacks it. Never through a link (the folder is opened
    O_NOFOLLOW, the file created O_EXCL|O_NOFOLLOW in it: an existing one, link or not, is left
    alone); a folder that cannot be written is left as it is (the file is a courtesy)."""
    try:
        folder.mkdir(exist_ok=True)
        # the folder itself opened without following a link, the file created relative to it: a
        # folder swapped for a link after the checks above gets nothing written through it
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fd = os.open(
            ".gitignore",
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=dir_fd,
        )
    except OSError:
        return
    finally:
        os.close(dir_fd)
    try:
        os.write(fd, GITIGNORE)
    finally:
        os.close(fd)


# how long a looked-up Warp version is reused: reading the installed metadata costs 0.3-0.9 ms
# (it scans sys.path), and every job computes its result key
WARP_VERSION_TTL_S = 10.0
_warp_version: tuple[float, str] | None = None


def warp_version() -> str:
    """The installed ``warp-lang`` version, looked up again after ``WARP_VERSION_TTL_S`` (an
    upgrade while the daemon runs still changes the result key)."""
    global _warp_version
    now = time.monotonic()
    if _warp_version is not None and now - _warp_version[0] < WARP_VERSION_TTL_S:
        return _warp_version[1]
    try:
        version = metadata.version("warp-lang")
    except metadata.PackageNotFoundError:
        version = "unknown"
    _warp_version = (now, version)
    return version


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to a temporary file next to ``path`` and rename it over ``path``.

    ``durable``: fsync the data before the rename (survives a power loss; about 8 ms).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_stale_temp(workspace: Path, min_age_s: float = 3600.0) -> int:
    """Delete the temporary files ``atomic_write_bytes`` leaves when its process is killed in
    the middle of a write (``.NAME.XXXX.tmp``, never read: readers only take ``*.msgpack``);
    only those older than ``min_age_s`` (another process may be writing one right now).
    Returns how many were removed."""
    removed = 0
    now = time.time()
    for sub in ((), ("results",), ("repros",)):
        try:
            folder = state_path(workspace, *sub, "-").parent
        except OutsideWorkspaceError:
            continue
        if not folder.is_dir():
            continue
        for tmp in folder.glob(".*.tmp"):
            try:
                if tmp.is_file() and not tmp.is_symlink() and now - tmp.stat().st_mtime >= min_age_s:
                    tmp.unlink()
                    removed += 1
            except OSError:
                continue
    return removed


# A workspace can ship its own .warp-harness/results: three 16.8 MB files of empty maps made
# each save take 13 s and 2.4 GB. A state file (a result, a failing case, the history) is read
# only when it is a regular file of at most MAX_STATE_FILE bytes, and decoded into at most
# MAX_STATE_VALUES values (what one 16 MiB frame may hold: a result is sent in one frame); any
# other is deleted with a note on stderr, like a corrupt one, and rebuilt when needed. Real
# files are a few KB; the size cap leaves room for large blobs (few values, no bomb).
MAX_STATE_FILE = 128 * 1024 * 1024
MAX_STATE_VALUES = protocol.value_limit(protocol.MAX_FRAME)


def read_msgpack_map(
    path: Path, schema: int | None, *, max_bytes: int = MAX_STATE_FILE, max_values: int = MAX_STATE_VALUES
) -> dict[str, Any] | None:
    """The map stored at ``path``; None if absent. A corrupt file, one that is not a regular
    file, one above ``max_bytes`` or decoding into more than ``max_values`` values is deleted
    (with a note on stderr) and None returned; one whose ``schema`` is not ``schema`` (None: any)
    is deleted too."""
    try:
        data = read_regular(path, max_bytes)
    except FileNotFoundError:
        return None
    except FileTooLargeError as exc:
        _log.warning("warp-harness: %s; deleted (a state file is rebuilt when needed)", exc)
        discard(path)
        return None
    except OSError as exc:
        _log.warning("warp-harness: %s: not read (%s); deleted", path, exc)
        discard(path)
        return None
    try:
        obj = protocol.unpackb(data, max_size=max_bytes, max_values=max_values)
    except protocol.ProtocolError as exc:
        _log.warning("warp-harness: %s: %s; deleted", path, exc.message)
        discard(path)
        return None
    except Exception as exc:  # msgpack raises several unrelated classes
        _log.warning("warp-harness: %s is not a valid state file (%s); deleted", path, exc)
        discard(path)
        return None
    if not isinstance(obj, dict) or (schema is not None and obj.get("schema") != schema):
        discard(path)
        return None
    return obj


def seal_entry(entry: dict[str, Any]) -> bytes:
    """The bytes of a result file holding ``entry``, tagged with this user's secret
    (StateUnusable when the secret cannot be read or made: nothing is stored)."""
    data = protocol.packb(entry)
    return protocol.packb(
        {"schema": SIGNED_SCHEMA, "entry": data, "tag": user_state.sign(data, purpose=TAG_PURPOSE)}
    )


def read_result_entry(path: Path) -> dict[str, Any] | None:
    """The entry of the result file at ``path`` when this user's harness wrote it (its tag
    verifies); None otherwise. A file without a valid tag (shipped by a repository, planted by
    someone else, left by an older harness) is deleted with a one-line note, never decoded further."""
    outer = read_msgpack_map(path, None)
    if outer is None:
        return None
    data, tag = outer.get("entry"), outer.get("tag")
    if (
        outer.get("schema") != SIGNED_SCHEMA
        or not isinstance(data, bytes)
        or not isinstance(tag, str)
        or not user_state.verify(data, tag, purpose=TAG_PURPOSE)
    ):
        _log.warning("warp-harness: %s was not written by this user's harness; ignored and deleted", path)
        discard(path)
        return None
    try:
        entry = protocol.unpackb(data, max_size=MAX_STATE_FILE, max_values=MAX_STATE_VALUES)
    except Exception:  # our own tag over bytes we could not decode: a bug, never a verdict
        discard(path)
        return None
    if not isinstance(entry, dict) or entry.get("schema") != SCHEMA:
        discard(path)
        return None
    return entry


def discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def file_sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


# runtime options that never change a verdict (limits and housekeeping)
NOT_IN_RESULT_KEY = frozenset(
    {"timeout_s", "memory_mb", "debounce_ms", "kernel_cache_keep", "kernel_cache_max_mb"}
)


def result_key(options: dict[str, Any], steps: Sequence[Step] = DEFAULT_STEPS) -> str:
    """What, besides the sources, decides a verdict: options, devices, the pipeline's optional
    steps requested, Warp version. (The key's field keeps its old name, ``stages``, so results
    stored before the rename stay valid.)"""
    relevant = {k: v for k, v in options.items() if k not in NOT_IN_RESULT_KEY}
    names = sorted(str(s) for s in steps)
    payload = {"schema": SCHEMA, "options": relevant, "stages": names, "warp": warp_version()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    discarded: int = 0
    stores: int = 0


class ResultCache:
    """``write_behind``: ``store`` hands the write over (`write_behind.LatestWrites`) and returns
    (the daemon pushes the result first, and the file is written while the client reads it).
    ``lookup`` and ``dependents`` wait for writes still under way (``flush``), so they read
    the files as if every store had written at once. Off by default (``ci``, ``bench``: the
    file is written when ``store`` returns)."""

    def __init__(self, workspace: Path, *, write_behind: bool = False) -> None:
        self.workspace = workspace.resolve()
        self.folder = state_dir(self.workspace) / "results"
        self.stats = CacheStats()
        self.write_behind = write_behind
        # dependents(): {cache file name: (its stat signature, module path, dependency paths)},
        # so a save re-reads only the result files written since the last one
        self._deps_index: dict[str, tuple[tuple[int, int, int], str | None, frozenset[str]]] = {}
        self._deps_lock = threading.Lock()
        self._writes = LatestWrites("warp-harness-result-writer")
        self.write_error: str | None = None  # the last write that failed (read-only, full disk)

    @staticmethod
    def file_name(path: Path) -> str:
        return hashlib.sha256(str(path.resolve()).encode("utf-8")).hexdigest()[:32] + ".msgpack"

    def file_for(self, path: Path) -> Path:
        """The cache file of ``path``; OutsideWorkspaceError when the folder leads out."""
        return state_path(self.workspace, "results", self.file_name(path))

    def lookup(self, path: Path, key: str) -> dict[str, Any] | None:
        if self._writes.pending:
            self.flush()
        try:
            file = self.file_for(path)
        except OutsideWorkspaceError:
            self.stats.misses += 1
            return None
        existed = file.exists()
        entry = read_result_entry(file)
        if entry is None:
            if existed and not file.exists():
                self.stats.discarded += 1
            self.stats.misses += 1
            return None
        result = entry.get("result")
        deps = entry.get("deps")
        valid = (
            entry.get("key") == key
            and entry.get("path") == str(path.resolve())
            and isinstance(result, dict)
            and isinstance(deps, list)
            and all(isinstance(d, list | tuple) and len(d) == 2 for d in deps)
        )
        if not valid:
            if entry.get("key") == key:  # right key, wrong shape: corrupt
                discard(file)
                self.stats.discarded += 1
            self.stats.misses += 1
            return None
        assert isinstance(deps, list) and isinstance(result, dict)
        for dep_path, sha in deps:
            if file_sha(Path(str(dep_path))) != sha:
                self.stats.misses += 1
                return None
        self.stats.hits += 1
        return result

    def store(self, path: Path, key: str, result: dict[str, Any]) -> None:
        """Store ``result`` (with ``write_behind``: written by the cache's thread; a failed
        write is kept in ``write_error``, as a result that could not be stored is no error)."""
        deps = result.get("deps") or [[str(path.resolve()), file_sha(path)]]
        entry = {
            "schema": SCHEMA,
            "key": key,
            "path": str(path.resolve()),
            "deps": [list(d) for d in deps],
            "result": result,
            "created": time.time(),
        }
        if not self.write_behind:
            try:
                data = seal_entry(entry)
            except user_state.StateUnusable as exc:  # no secret, no cache: the verdict still stands
                self.write_error = f"StateUnusable: {exc}"
                return
            atomic_write_bytes(self.file_for(path), data, durable=False)
            self.stats.stores += 1
            return
        name = self.file_name(path)
        self._writes.submit(name, partial(self._write_entry, name, entry))
        self.stats.stores += 1

    def _write_entry(self, name: str, entry: dict[str, Any]) -> None:
        try:
            data = seal_entry(entry)
            atomic_write_bytes(state_path(self.workspace, "results", name), data, durable=False)
        except Exception as exc:  # OSError, OutsideWorkspaceError, StateUnusable, a value msgpack refuses
            self.write_error = f"{type(exc).__name__}: {exc}"
            _log.debug("warp-harness: result not stored: %s", self.write_error)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every stored entry is written (or its write failed); False after
        ``timeout``."""
        return self._writes.flush(timeout)

    def dependents(self, changed: Path) -> list[Path]:
        """Cached modules that imported ``changed`` (a helper module saved on its own).

        Blocking (stats every result file, reads the new ones): call it off the event loop."""
        out: list[Path] = []
        target = str(changed.resolve())
        try:
            state_path(self.workspace, "results", "-")
        except OutsideWorkspaceError:
            return out
        if self._writes.pending:
            self.flush()
        if not self.folder.is_dir():
            return out
        with self._deps_lock:
            seen: set[str] = set()
            for file in sorted(self.folder.glob("*.msgpack")):
                known = self._deps_entry(file)
                if known is None:
                    continue
                seen.add(file.name)
                _, module, deps = known
                if module is not None and module != target and target in deps:
                    out.append(Path(module))
            for name in self._deps_index.keys() - seen:
                del self._deps_index[name]
        return out

    def _deps_entry(self, file: Path) -> tuple[tuple[int, int, int], str | None, frozenset[str]] | None:
        """``file``'s (signature, module, dependencies), read again only when it changed."""
        try:
            st = file.stat()
        except OSError:
            return None
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        known = self._deps_index.get(file.name)
        if known is not None and known[0] == signature:
            return known
        known = (signature, *_deps_of(read_result_entry(file)))
        self._deps_index[file.name] = known
        return known


def _deps_of(entry: dict[str, Any] | None) -> tuple[str | None, frozenset[str]]:
    """(module path, the paths of its dependencies) of a result entry."""
    module = entry.get("path") if entry is not None else None
    deps = entry.get("deps") if entry is not None else None
    names = frozenset(
        d[0]
        for d in (deps if isinstance(deps, list) else [])
        if isinstance(d, list | tuple) and d and isinstance(d[0], str)
    )
    return (module if isinstance(module, str) else None, names)
