"""Workspace stamps: the modules a cached result depends on, checked without indexing the workspace.

The start-up process (`server/start_up_process.py`) answers a document opened at an earlier start from
the user's result cache (`warp_harness/check_cache.py`). An entry is valid while the modules its launches
resolved against keep their digests, and telling which file a module name resolves to takes the workspace
model: importing it and indexing the workspace folders costs ~70 ms of CPU on newton, most of the start-up
process's work before its answer (on a loaded machine, several times that in wall time, and the server
shares that CPU).

A stamp, stored beside the entry under the same key, records what the model said when the entry was made
or last confirmed: the file of every module of the entry (none: not in the workspace), and the
modification time of every folder whose listing the model read (the folders walked, and above each
workspace root the folders that decide where its package starts). A folder's time changes whenever a file
or folder in it is created, removed or renamed, so while every folder keeps its time, every module name
resolves to the same file as then: a module's digest is then that of its file's bytes now (or of the
text of a document the client opened). Any folder changed, removed or unreadable, other roots, or a
damaged stamp: no answer from the stamp, and the start-up process indexes the workspace as before.

Stamps live in the user's private cache folder beside the entries (never in a workspace), are read only
when they are regular files of this user under a size cap, and are only ever a shortcut: the server's own
analysis follows the start-up answer and is published when it differs.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack

from warp_harness.digests import blake2b

if TYPE_CHECKING:
    from warp_harness.model.project import ProjectIndex

FORMAT = 1
MAX_STAMP_BYTES = 4 * 1024 * 1024
# the largest module the workspace model reads (`model.project.MAX_INDEXED_BYTES`; a test holds them equal)
MAX_MODULE_BYTES = 8 * 1024 * 1024
# the folder, beside the result cache's entries
FOLDER = f"start-up-v{FORMAT}"


def digest(data: bytes) -> str:
    """A module's digest as the workspace model computes it (`model.project._digest`)."""
    return blake2b(data, digest_size=20).hexdigest()


def _mtime_ns(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def _folders_read(project_roots: Iterable[Path]) -> dict[str, int]:
    """Every folder whose listing the workspace model read for ``project_roots`` (the folders
    `ProjectIndex.add_tree` walks, and the ancestors whose ``__init__.py`` decide module names), with
    its modification time."""
    from warp_harness.workspace import IGNORED_DIRS

    times: dict[str, int] = {}
    for root in project_roots:
        for folder, dirs, _ in os.walk(root):
            dirs[:] = [d for d in dirs if d not in IGNORED_DIRS and not d.endswith(".egg-info")]
            time = _mtime_ns(folder)
            if time is not None:
                times[folder] = time
        above = Path(root).parent
        while True:  # up to the first folder that is no package (its listing ends the module names)
            time = _mtime_ns(str(above))
            if time is None:
                break
            times[str(above)] = time
            if not (above / "__init__.py").is_file() or above.parent == above:
                break
            above = above.parent
    return times


def project_roots(roots: Iterable[Path]) -> list[Path]:
    """The folders `ProjectIndex.for_paths(roots)` walks."""
    from warp_harness.model.project import package_root

    found: list[Path] = []
    for path in roots:
        root = package_root(path)
        if path.is_dir() and not (Path(path) / "__init__.py").is_file():
            found.append(Path(os.path.abspath(path)))
        if root not in found:
            found.append(root)
    return found


def write(folder: Path, key: str, roots: list[str], project: ProjectIndex, modules: Iterable[str]) -> None:
    """Store the stamp of the entry ``key``: where the workspace model of ``roots`` resolves
    ``modules`` (the entry's dependencies), and the times of the folders it read. Nothing is written
    for a module the model holds outside those folders (a document opened from elsewhere)."""
    times = _folders_read(project_roots([Path(root) for root in roots]))
    files: dict[str, str] = {}
    for module in modules:
        path = project.path_of(module)
        if path is not None and str(path.parent) not in times:
            return
        files[module] = "" if path is None else str(path)
    data = msgpack.packb({"format": FORMAT, "roots": roots, "folders": times, "files": files})
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, folder / key)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a full disk costs the next start the index, nothing else


def _read(path: Path) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > MAX_STAMP_BYTES:
            return None
        data = os.read(fd, MAX_STAMP_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception:
        return None


def digests(
    folder: Path, key: str, roots: list[str], texts: Mapping[str, str]
) -> Callable[[str], str | None] | None:
    """A module's digest now (`CheckCache.get`'s ``current``) from the stamp of the entry ``key``, when it
    is for ``roots`` and no folder it names changed; None otherwise. ``texts``: the open documents' texts
    by path (they count instead of the files)."""
    stamp = _read(folder / key)
    if not isinstance(stamp, dict) or stamp.get("format") != FORMAT or stamp.get("roots") != roots:
        return None
    times, files = stamp.get("folders"), stamp.get("files")
    if not isinstance(times, dict) or not isinstance(files, dict) or not times:
        return None
    for path, time in times.items():
        if not isinstance(path, str) or _mtime_ns(path) != time:
            return None

    def current(module: str) -> str | None:
        path = files.get(module)
        if not isinstance(path, str):
            return None  # not known to the stamp: the entry cannot be confirmed
        if not path:
            return ""
        text = texts.get(path)
        if text is not None:
            return digest(text.encode("utf-8", "surrogatepass"))
        from warp_harness.safe_read import read_regular

        try:
            return digest(read_regular(path, MAX_MODULE_BYTES))
        except (OSError, ValueError):
            return ""

    return current


__all__ = ["digests", "write"]
