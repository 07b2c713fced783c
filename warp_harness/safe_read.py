"""Reading files a workspace controls: regular files only, never more than a size cap.

A workspace can hold a symlink ``x.py -> /dev/zero`` (git stores it), a FIFO named ``a.py``
or a 100 MB ``pyproject.toml``; a plain ``read_bytes`` would eat all memory or block for
ever. :func:`read_regular` stats the path first (a FIFO or device is never opened), opens it
with ``O_NONBLOCK`` (opening a FIFO swapped in meanwhile does not wait for a writer), checks
the *opened* descriptor with ``fstat`` (no swap between check and read) and reads at most
``limit + 1`` bytes. A symlink is followed only when it ends at a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# source files: the largest Python file in Warp itself is about 0.4 MB
MAX_FILE_BYTES = 10 * 1024 * 1024
# configuration and state files (pyproject.toml, hardware profiles, tune results): a few KB
MAX_CONFIG_BYTES = 2 * 1024 * 1024


class UnreadableFileError(OSError):
    """The path is not a regular file, or it is larger than the limit; ``reason`` says which."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class NotRegularFileError(UnreadableFileError):
    pass


class FileTooLargeError(UnreadableFileError):
    def __init__(self, path: Path | str, size: int, limit: int) -> None:
        super().__init__(path, f"file is {_mb(size)}; larger than the {_mb(limit)} limit; not read")
        self.size = size
        self.limit = limit


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _check(path: Path | str, st: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(path, f"{kind_of(st.st_mode)}, not a regular file; not read")
    if st.st_size > limit:
        raise FileTooLargeError(path, st.st_size, limit)


def read_regular(path: Path | str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed).

    Raises NotRegularFileError (FIFO, device, socket, folder), FileTooLargeError (over
    ``limit``, checked before reading and again while reading) or another OSError.
    """
    _check(path, os.stat(path), limit)  # a FIFO or device is refused before anything opens it
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        _check(path, st, limit)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:  # the file grew after the fstat
            raise FileTooLargeError(path, total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: Path | str, limit: int = MAX_FILE_BYTES, errors: str = "strict") -> str:
    """:func:`read_regular` decoded as UTF-8 (UnicodeDecodeError with ``errors="strict"``)."""
    return read_regular(path, limit).decode("utf-8", errors)
