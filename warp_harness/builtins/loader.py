"""Where the builtin table comes from: the per-version cache, a fresh extraction, or the snapshot.

Order: ``<cache dir>/builtins-<warp version>.msgpack`` when it decodes and matches the installed
Warp; otherwise a fresh extraction in a child process (``extract.py``, which imports Warp there,
never here), written to the cache atomically; otherwise, when Warp cannot be imported or the
extraction fails, the snapshot shipped in this package. A cache file that does not decode is
deleted and rebuilt, never trusted.
A cache file is checked record by record the first time its bytes are loaded; the digest of bytes
that passed is kept beside it (``.checked``) so later process starts skip those checks, and
`cached_identity` names the table without decoding it.
A cache folder that is a link, another user's or writable by others is not used (neither read nor
written; one note on stderr), nor is a cache file that is a link or another user's: a table planted
in a shared cache folder would decide which builtin calls are errors.

The installed Warp version, the cache's paths and its identity: `cache_files`, which a run answered
from a result cache imports alone (no table decoded, no table code imported).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .cache_files import (
    EXTRACT_SCRIPT,
    NotPrivate,
    _checked_path,
    _digest,
    _extractor_id,
    _sidecar_fields,
    cache_path,
    folder_problem,
    installed_warp_version,
    read_private,
)
from .table import BuiltinTable, TableFormatError

SNAPSHOT = Path(__file__).with_name("snapshot.msgpack")
EXTRACT_TIMEOUT_S = 120.0

# The interpreter that runs the extractor; None means ``sys.executable`` (tests point it elsewhere)
EXTRACTOR_PYTHON: str | None = None


class ExtractionError(RuntimeError):
    """The child process could not dump the table (Warp missing, broken, or too slow)."""


def _unpackb(payload: bytes) -> Any:
    import msgpack  # type: ignore[import-untyped,unused-ignore]

    return msgpack.unpackb(payload, raw=False, strict_map_key=False)


def decode(payload: bytes, origin: str, *, records_checked: bool = False) -> BuiltinTable:
    """Decode a dumped table; raises :class:`TableFormatError` for anything that is not one."""
    # tens of thousands of small containers: the cyclic collector would run many times for nothing
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            data = _unpackb(payload)
        except Exception as exc:  # msgpack raises a handful of classes for truncated/garbage input
            raise TableFormatError(f"not a msgpack table: {exc}") from exc
        if not isinstance(data, dict):
            raise TableFormatError("top level is not a map")
        try:
            return BuiltinTable(data, origin, records_checked=records_checked)
        except TableFormatError:
            raise
        except Exception as exc:  # a well-formed msgpack file of the wrong shape
            raise TableFormatError(f"malformed table: {exc}") from exc
    finally:
        if gc_was_enabled:
            gc.enable()


def load_file(path: Path, origin: str) -> BuiltinTable:
    return decode(path.read_bytes(), origin)


def load_cache_file(path: Path) -> BuiltinTable:
    """A cache file, checked record by record once: what bytes passed is kept beside it
    (``<name>.checked``: their digest, Warp version and extractor), and the same bytes are then
    decoded without the per-record checks (about 10 ms of every process start). Any other bytes, a
    missing or odd sidecar: full checks."""
    payload = read_private(path)
    digest = _digest(payload)
    sidecar = _checked_path(path)
    checked = _sidecar_fields(sidecar)
    table = decode(payload, "cache", records_checked=checked is not None and checked[0] == digest)
    table.identity = f"cache:{table.dist_version}:{digest}"
    fields = (digest, table.dist_version, table.extractor_id or "-")
    if checked != fields and all(f and not any(c.isspace() for c in f) for f in fields):
        _write_quietly(sidecar, " ".join(fields))
    return table


def _write_quietly(path: Path, text: str) -> None:
    """Atomically, or not at all (a read-only cache folder only costs the checks next time)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="ascii")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


def run_extractor(output: Path, timeout: float = EXTRACT_TIMEOUT_S) -> None:
    """Dump the table to ``output`` in a child process; raises :class:`ExtractionError`."""
    import subprocess  # here: a table loaded from the cache or the snapshot never runs one
    import tempfile

    python = EXTRACTOR_PYTHON or sys.executable
    cmd = [python, str(EXTRACT_SCRIPT), "--output", str(output)]
    try:
        proc = subprocess.run(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
            cwd=tempfile.gettempdir(),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ExtractionError(f"could not run the extractor ({python}): {exc}") from exc
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise ExtractionError(f"extractor exited with {proc.returncode}: " + " | ".join(tail))


def extract_to_cache(version: str, *, cacheable: bool = True) -> BuiltinTable:
    """Extract in a child process and store the result as the cache for ``version``.

    When the cache folder cannot be written or is not private (`folder_problem`), or ``cacheable``
    is False, the table is extracted to a temporary file and returned without being cached.
    """
    import tempfile

    target = cache_path(version)
    try:
        if not cacheable:
            raise PermissionError("not cached")
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if folder_problem(target.parent) is not None:
            raise PermissionError("not a private folder")
        fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    except OSError:
        cacheable = False
        fd, tmp_name = tempfile.mkstemp(prefix="warp-harness-builtins.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        run_extractor(tmp)
        table = load_file(tmp, "extracted")  # validate before it may become the cache
        if cacheable and table.dist_version == version:
            os.replace(tmp, target)
        return table
    except TableFormatError as exc:
        raise ExtractionError(f"extractor wrote an unreadable table: {exc}") from exc
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def load_snapshot() -> BuiltinTable:
    return load_file(SNAPSHOT, "snapshot")


# Diagnostics of the last load in this process (for logs and the project notes)
last_load: dict[str, Any] = {}


def _load(allow_extract: bool) -> BuiltinTable:
    version = installed_warp_version()
    problems: list[str] = []
    t0 = time.perf_counter()
    if version is not None:
        path = cache_path(version)
        unsafe = folder_problem(path.parent)
        if unsafe is not None:
            problems.append(unsafe)
            print(f"warp-harness: {unsafe}", file=sys.stderr)
        elif os.path.lexists(path):
            try:
                table = load_cache_file(path)
                if table.dist_version == version and table.extractor_id == _extractor_id():
                    last_load.update(origin="cache", seconds=time.perf_counter() - t0, path=str(path))
                    return table
                problems.append(
                    f"stale cache {path} (warp {table.dist_version}, extractor {table.extractor_id})"
                )
            except NotPrivate as exc:
                problems.append(f"ignored cache {exc}")
                print(f"warp-harness: builtin table cache {exc}; ignored", file=sys.stderr)
            except (TableFormatError, OSError) as exc:
                problems.append(f"discarded corrupt cache {path}: {exc}")
            for stale in (path, _checked_path(path)):
                try:
                    stale.unlink()
                except OSError:
                    pass
        if allow_extract:
            try:
                table = extract_to_cache(version, cacheable=unsafe is None)
                last_load.update(origin="extracted", seconds=time.perf_counter() - t0, path=str(path))
                return table
            except (ExtractionError, OSError) as exc:
                problems.append(str(exc))
    else:
        problems.append("warp-lang is not installed")
    table = load_snapshot()
    last_load.update(
        origin="snapshot", seconds=time.perf_counter() - t0, path=str(SNAPSHOT), problems=problems
    )
    return table


_memo: dict[bool, BuiltinTable] = {}
_lock = threading.Lock()


def load_table(*, allow_extract: bool = True) -> BuiltinTable:
    """The builtin table for the installed Warp, memoised per process.

    ``allow_extract=False`` never starts a child process: the cache, else the snapshot.
    """
    with _lock:
        table = _memo.get(allow_extract)
        if table is None:
            table = _load(allow_extract)
            _memo[allow_extract] = table
            if allow_extract or table.origin == "cache":
                _memo.setdefault(False, table)
        return table


def clear_memo() -> None:
    """Forget the memoised tables (tests; a long-lived process after Warp was upgraded)."""
    with _lock:
        _memo.clear()
        last_load.clear()
