"""Folders of this user under a shared temporary folder (``/tmp``): private, checked, never squatted.

A predictable name in a folder every user can write (``/tmp/warp-harness-<uid>``,
``/tmp/warp-harness-ray-<uid>``) can be taken first by another local user: used as it is, their
folder would hold our sockets or a workspace we then run; refused, the daemon could not start.
`private_temp_dir` creates the folder ``0700`` and checks it (a real folder, not a link, ours,
nobody else can enter it) before it is used; when the name is taken it makes a fresh folder of
an unpredictable name (``mkdtemp``) and records where, in the user's private cache folder
(`user_state.user_cache_root`), so every process of this user (the daemon and its clients, the
runners of one Ray node) finds the same replacement. `check_private` checks again at each use.
"""

from __future__ import annotations

import fcntl
import logging
import os
import stat
import tempfile
from pathlib import Path

from warp_harness.digests import blake2b
from warp_harness.user_state import StateUnusable, private_dir, user_cache_root

__all__ = ["RECORDS", "FolderUnusable", "check_private", "make_private", "private_temp_dir"]

log = logging.getLogger(__name__)

RECORDS = "temp-folders"  # under user_cache_root(): one file per squatted name, naming its replacement
_RECORD_MAX = 4096
_warned: set[str] = set()


class FolderUnusable(PermissionError):
    """A folder is not this user's private folder and no replacement could be made; ``str()`` says why."""


def check_private(path: Path) -> Path:
    """``path`` when it is a real folder (not a link) of this user that nobody else can enter;
    FolderUnusable otherwise."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise FolderUnusable(f"{path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FolderUnusable(f"{path} exists and is not a folder (a link or a file)")
    if st.st_uid != os.getuid():
        raise FolderUnusable(f"{path} belongs to uid {st.st_uid}, not to this user")
    if st.st_mode & 0o077:
        raise FolderUnusable(f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})")
    return path


def make_private(path: Path) -> Path:
    """Create ``path`` (``0700``) or take the existing one when it is ours; `check_private`.

    A folder of ours that others may only read or enter is closed (``0700``); one they could
    write is refused: anything may have been put into it."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise FolderUnusable(f"{path}: {exc.strerror or exc}") from None
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise FolderUnusable(f"{path}: {exc.strerror or exc}") from None
    ours = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    if ours and not st.st_mode & 0o022 and st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return check_private(path)


def private_temp_dir(name: str, base: Path | None = None) -> Path:
    """``base/name`` (base: the temporary folder, ``$TMPDIR`` or ``/tmp``) as this user's private
    folder; when another user holds that name (or it is a link, a file, a folder others can
    write), the replacement recorded for it, made once with an unpredictable name (``mkdtemp``
    in ``base``). FolderUnusable when neither can be had."""
    primary = (base or Path(tempfile.gettempdir())) / name
    try:
        return make_private(primary)
    except FolderUnusable as exc:
        why = str(exc)
    replacement = _replacement(primary, why)
    if str(primary) not in _warned:
        _warned.add(str(primary))
        log.warning("warp-harness: %s; using %s instead", why, replacement)
    return replacement


def _record_path(primary: Path) -> Path:
    key = blake2b(os.fsencode(primary), digest_size=12).hexdigest()
    return private_dir(private_dir(user_cache_root()) / RECORDS) / key  # every level checked


def _read_record(record: Path, primary: Path) -> Path | None:
    """The recorded replacement of ``primary`` when it is still a private folder of ours beside
    it, named after it; None otherwise (none recorded, removed at a reboot, taken meanwhile)."""
    try:
        fd = os.open(record, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        named = Path(os.fsdecode(os.read(fd, _RECORD_MAX).rstrip(b"\n")))
    finally:
        os.close(fd)
    if named.parent != primary.parent or not named.name.startswith(primary.name + "-"):
        return None
    try:
        return check_private(named)
    except FolderUnusable:
        return None


def _replacement(primary: Path, why: str) -> Path:
    try:
        record = _record_path(primary)
    except StateUnusable as exc:
        raise FolderUnusable(f"{why}, and no replacement can be recorded ({exc})") from None
    found = _read_record(record, primary)
    if found is not None:
        return found
    try:
        return _make_replacement(record, primary, why)
    except OSError as exc:
        if isinstance(exc, FolderUnusable):
            raise
        raise FolderUnusable(f"{why}, and no replacement can be recorded: {exc}") from None


def _make_replacement(record: Path, primary: Path, why: str) -> Path:
    lock = os.open(f"{record}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one replacement for every process that needs one now
        found = _read_record(record, primary)
        if found is not None:
            return found
        try:
            made = Path(tempfile.mkdtemp(prefix=primary.name + "-", dir=primary.parent))
        except OSError as exc:
            raise FolderUnusable(f"{why}, and no replacement can be made: {exc}") from None
        partial = record.with_name(f".{record.name}.{os.getpid()}.tmp")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(os.fsencode(made) + b"\n")
        os.replace(partial, record)
        return check_private(made)
    finally:
        os.close(lock)
