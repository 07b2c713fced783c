"""The Warp kernel build cache: ``<user cache>/workspaces/<workspace key>/kernels/<key>/``.

Warp names its cache folders with 7 hex digits of the module hash (collisions and stale
binaries were reported upstream, warp#1696/#1711). We give every (module, device) build
its own folder whose key is a SHA-256 over

- Warp's full module hash (source of every kernel and called function, constants, types),
- every resolved module option (mode, fast_math, fuse_fp, lineinfo, optimization_level,
  max_unroll, enable_backward, block_dim, verify_fp, compiler flags, ...),
- the Warp version and the harness's cache schema version,
- the device kind and its architecture (CUDA ``sm_XX``; the CPU's machine architecture),

and point ``warp.config.kernel_cache_dir`` at it just before ``Module.load``. Warp's own
cache logic then only ever sees one build per folder.

The builds live in the user's private cache folder (``user_state.workspace_state_dir``: owned by
this user, 0700, no link on the way), never in the workspace: the key is computable from public
facts, so a build a repository ships under ``.warp-harness/kernels/<key>/`` would be loaded instead
of compiling the source (native code that is not in the source, a wrong kernel's verdict turned
into a pass). A workspace's ``.warp-harness/kernels`` is never read (``shipped_note`` says so).

The folders are pruned when the daemon starts (``prune``: least recently used first, within
``kernel_cache_keep`` folders and ``kernel_cache_max_mb`` of [tool.warp-harness.runtime]).

When the private folder cannot be used (another user's, writable by others, a link, read-only or
impossible to create) builds go to a private temporary folder of the process instead (``0700``,
removed at exit): kernels are still checked, only not cached across runs.

A node's cache: the Ray executor's runners (daemon/ray_executor.py) each hold a private copy of
the workspace, so a per-workspace cache would be filled again by every runner. They name one
folder of the node in ``WARP_HARNESS_KERNEL_CACHE`` (inherited by their workers), and builds go
there instead: a folder this user owns that no one else may write (``private_folder``;
anything else is ignored and the per-workspace cache used). It is safe to share: a build folder is
named by the full key above (the same name means the same build), and Warp builds into a folder
of its own process and thread and renames it into place, so concurrent writers of one key leave
one complete build. ``prune_folder`` keeps it within the runtime options' limits.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import platform
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warp_harness import user_state

SCHEMA = 1
_BINARY_SUFFIXES = (".o", ".cubin", ".ptx", ".so", ".dll")


NODE_CACHE_ENV = "WARP_HARNESS_KERNEL_CACHE"


def private_folder(folder: Path) -> Path | None:
    """``folder`` (created ``0700`` when missing) when it is a real folder, not a link, owned by
    this user and writable by no one else; None otherwise (another user's, a shared /tmp name)."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return folder


def node_root() -> Path | None:
    """The node's shared cache named by ``WARP_HARNESS_KERNEL_CACHE`` (None: not set, or not a
    private folder of this user: see ``private_folder``)."""
    value = os.environ.get(NODE_CACHE_ENV)
    if not value or not os.path.isabs(value):
        return None
    return private_folder(Path(value))


def cache_root(workspace: Path) -> Path:
    """The workspace's build folders in the user's private cache (created and checked);
    ``user_state.StateUnusable`` when that folder cannot be trusted or created."""
    return user_state.workspace_state_dir(workspace, "kernels")


def shipped_note(workspace: Path) -> str | None:
    """A one-line note when the workspace holds a ``.warp-harness/kernels`` (shipped by the
    repository, or left by an older harness): it is never read."""
    shipped = workspace / ".warp-harness" / "kernels"
    if not os.path.lexists(shipped):
        return None
    return f"warp-harness: {shipped} is ignored (builds are kept in the user's private cache folder)"


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def build_key(
    module_hash: bytes | str,
    resolved_options: dict[str, Any],
    warp_version: str,
    device_kind: str,
    arch: str | int | None,
) -> str:
    """The folder name of one build (64 hex digits)."""
    payload = {
        "schema": SCHEMA,
        "module_hash": module_hash.hex() if isinstance(module_hash, bytes) else module_hash,
        "options": _jsonable(resolved_options),
        "warp": warp_version,
        "device": device_kind,
        "arch": str(arch) if arch is not None else platform.machine(),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def has_binary(folder: Path) -> bool:
    """Whether a build folder already holds a compiled binary and its meta file."""
    if not folder.is_dir():
        return False
    names = [p.name for p in folder.rglob("*") if p.is_file()]
    return any(n.endswith(".meta") for n in names) and any(n.endswith(_BINARY_SUFFIXES) for n in names)


def describe_device(device: Any) -> tuple[str, str | int | None]:
    """(kind, arch) of a Warp device object: ("cpu", None) or ("cuda", 90)."""
    if getattr(device, "is_cuda", False):
        return "cuda", getattr(device, "arch", None)
    return "cpu", None


# Warp's own default cache (WARP_CACHE_PATH of the worker) lives next to the build folders
WARP_DEFAULT = "warp-default"
PRUNE_MIN_AGE_S = 60.0


@dataclass(frozen=True)
class PruneReport:
    removed: int
    freed_bytes: int
    kept: int
    kept_bytes: int

    def to_dict(self) -> dict[str, int]:
        return {
            "removed": self.removed,
            "freed_bytes": self.freed_bytes,
            "kept": self.kept,
            "kept_bytes": self.kept_bytes,
        }


def _folder_bytes(folder: Path) -> int:
    total = 0
    for p in folder.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
        except OSError:
            continue
    return total


def _last_used(folder: Path) -> float:
    try:
        return folder.stat().st_mtime
    except OSError:
        return 0.0


def prune(
    workspace: Path,
    keep: int = 200,
    max_bytes: int = 2048 * 1024 * 1024,
    *,
    min_age_s: float = PRUNE_MIN_AGE_S,
    now: float | None = None,
) -> PruneReport:
    """Remove the least recently used build folders beyond ``keep`` folders or ``max_bytes``.

    Policy (the daemon runs it at start, before its worker): build folders are ranked by
    last use (``folder_for`` touches a folder each time a build is looked up or made; a
    folder's mtime also moves when files are written into it), newest first; a folder is
    kept while both the count and the running total of bytes stay within the limits.
    Folders used in the last ``min_age_s`` seconds are always kept (another process may be
    building into them right now), as is Warp's own default cache folder.
    """
    note = shipped_note(workspace)
    if note is not None:
        logging.getLogger(__name__).warning("%s", note)
    try:
        root = cache_root(workspace)
    except user_state.StateUnusable:
        return PruneReport(0, 0, 0, 0)  # never remove anything in a folder that is not ours
    return prune_folder(root, keep, max_bytes, min_age_s=min_age_s, now=now)


def prune_folder(
    root: Path,
    keep: int = 200,
    max_bytes: int = 2048 * 1024 * 1024,
    *,
    min_age_s: float = PRUNE_MIN_AGE_S,
    now: float | None = None,
) -> PruneReport:
    """``prune``'s policy on the build folders of ``root`` (a workspace's cache, a node's)."""
    if root.is_symlink() or not root.is_dir():
        return PruneReport(0, 0, 0, 0)
    now = time.time() if now is None else now
    folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and p.name != WARP_DEFAULT]
    ranked = sorted(((_last_used(p), p) for p in folders), key=lambda t: t[0], reverse=True)
    kept = removed = kept_bytes = freed = 0
    for used, folder in ranked:
        size = _folder_bytes(folder)
        recent = now - used < min_age_s
        if recent or (kept < keep and kept_bytes + size <= max_bytes):
            kept += 1
            kept_bytes += size
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if folder.exists():
            kept += 1
            kept_bytes += size
            continue
        removed += 1
        freed += size
    return PruneReport(removed, freed, kept, kept_bytes)


_private: Path | None = None


def private_root() -> Path:
    """This process's own temporary build folder (used when the workspace's cannot be)."""
    global _private
    if _private is None or not _private.is_dir():
        _private = Path(tempfile.mkdtemp(prefix="warp-harness-kernels-"))
        atexit.register(shutil.rmtree, _private, True)
    return _private


def _writable(folder: Path) -> bool:
    try:
        os.makedirs(folder, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".wh-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError:
        return False
    return True


# {cache root: the lstat signature it had when a file could be created in it}. A probe file per
# build folder cost ~1 ms a cache miss; the root is probed again only when its signature
# changes (chmod, replaced by another folder or a link), and a build folder that cannot be
# created under it still sends the build to ``private_root``.
_writable_roots: dict[Path, tuple[int, int, int, int]] = {}


def _root_signature(root: Path) -> tuple[int, int, int, int] | None:
    try:
        st = os.lstat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid)


def _writable_build_folder(root: Path, name: str) -> bool:
    """Whether ``root/name`` exists or could be created, and files can be written under
    ``root`` (probed once per root, see ``_writable_roots``)."""
    signature = _root_signature(root)
    if signature is None or _writable_roots.get(root) != signature:
        if not _writable(root):
            _writable_roots.pop(root, None)
            return False
        signature = _root_signature(root)
        if signature is None:
            return False
        _writable_roots[root] = signature
    try:
        os.makedirs(root / name, exist_ok=True)
    except OSError:
        return False
    return os.access(root / name, os.W_OK | os.X_OK)  # a build folder left read-only


def usable_folder(workspace: Path, name: str) -> Path:
    """``<node cache>/<name>`` when the process names a node's cache (``node_root``), else
    ``<cache_root(workspace)>/<name>``, or the same name under ``private_root()`` when that one
    is not private or cannot be written (a build already there may be read)."""
    shared = node_root()
    if shared is not None:
        try:
            os.makedirs(shared / name, exist_ok=True)
            return shared / name
        except OSError:
            pass
    try:
        root: Path | None = cache_root(workspace)
    except user_state.StateUnusable:
        root = None
    if root is not None and (has_binary(root / name) or _writable_build_folder(root, name)):
        return root / name
    folder = private_root() / name
    os.makedirs(folder, exist_ok=True)
    return folder


def folder_for(workspace: Path, key: str) -> Path:
    """The build folder of ``key``, created if needed and marked as just used (for prune)."""
    folder = usable_folder(workspace, key)
    try:
        os.utime(folder)
    except OSError:
        pass
    return folder
