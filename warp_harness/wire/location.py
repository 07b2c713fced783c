"""Where a workspace's daemon socket lives: the user's private runtime folder, the socket's
name, the daemon's lock and state files (docs/protocol.md, "Where the socket is"). The daemon
claims them; its clients (the language server, the command line) find the socket here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

__all__ = [
    "daemon_lock_path",
    "daemon_socket",
    "daemon_state_path",
    "ensure_private_dir",
    "our_socket",
    "read_daemon_state",
    "runtime_dir",
    "socket_path_for",
    "workspace_key",
]


def runtime_dir() -> Path:
    """A folder only this user can enter: $XDG_RUNTIME_DIR/warp-harness, else
    $TMPDIR/warp-harness-UID; created ``0700`` and checked (ours, not a link, closed to others).

    $XDG_RUNTIME_DIR counts only when it is a folder of ours that nobody else can write to
    (another user could otherwise swap our folder inside it). The name in the shared temporary
    folder is predictable: when another user took it first, a fresh private folder of an
    unpredictable name replaces it, recorded in the user's private cache folder so that the
    daemon and its clients (``status``, ``results``, the language server) find the same one
    (private_temp.private_temp_dir). FolderUnusable (a PermissionError) when there is none.
    """
    from warp_harness.private_temp import private_temp_dir

    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and _private_parent(Path(xdg)):
        return ensure_private_dir(Path(xdg) / "warp-harness")  # no one else can write beside it
    return private_temp_dir(f"warp-harness-{os.getuid()}")


def _private_parent(path: Path) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700, or check an existing one is ours, a real folder, and private."""
    try:
        path.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} exists and is not a directory (a symlink?); refusing to use it")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not to this user; refusing to use it")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def workspace_key(workspace: Path) -> str:
    return hashlib.sha256(str(workspace.resolve()).encode("utf-8")).hexdigest()[:16]


def socket_path_for(workspace: Path, base: Path | None = None) -> Path:
    """The daemon socket of a workspace: ``<runtime_dir>/<sha256(resolved workspace)[:16]>.sock``."""
    return (base or runtime_dir()) / f"{workspace_key(workspace)}.sock"


def daemon_state_path(workspace: Path) -> Path:
    """Where the workspace's daemon records its pid and socket: ``<runtime_dir>/<key>.json``.

    In the user's private folder, so only the user's own daemon can have written it (a
    workspace's ``.warp-harness/daemon.json`` is written for information only: a repository
    can ship one, and it is never read).
    """
    return runtime_dir() / f"{workspace_key(workspace)}.json"


def daemon_lock_path(workspace: Path) -> Path:
    """The lock a daemon holds for its whole life: one daemon per workspace."""
    return runtime_dir() / f"{workspace_key(workspace)}.lock"


def read_daemon_state(workspace: Path) -> dict[str, Any] | None:
    """The running daemon's record of ``workspace``, when it is a regular file of ours in the
    private runtime folder and describes this workspace; None otherwise."""
    path = daemon_state_path(workspace)
    try:
        ensure_private_dir(path.parent)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > 65536:
            return None
        data = json.loads(os.read(fd, 65536))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("workspace") != str(workspace.resolve()):
        return None
    return data


def our_socket(path: Path) -> bool:
    """Whether ``path`` is a Unix socket owned by this user (not a file someone else planted)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()


def daemon_socket(workspace: Path) -> Path:
    """Where ``workspace``'s daemon serves: the socket its private state names (a daemon started
    with ``--socket``), else the default path."""
    state = read_daemon_state(workspace)
    named = state.get("socket") if state else None
    if isinstance(named, str) and named and our_socket(Path(named)):
        return Path(named)
    return socket_path_for(workspace)
