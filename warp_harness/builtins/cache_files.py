"""Where the builtin table's cache lives and what names it, without decoding it or importing the table
code: the installed Warp version (package metadata; Warp is not imported), the cache file's path,
the extractor's id, and the ``.checked`` sidecar the loader writes beside a cache file whose records
passed its checks (their digest, the Warp version, the extractor). `cached_identity` is what a
result cache keys on when every file is answered from it.

The cache folder may be shared (``$WARP_HARNESS_CACHE_DIR``): a table another user planted there
would decide which builtin calls are errors (a forged overload silences WH004). So the folder is used
only while it is a real folder (not a link) of this user that no one else can write
(`folder_problem`, as the check cache's and the harness's other caches), and a cache file or sidecar
only while it is a regular file of this user that no one else can write (`read_private`).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

CACHE_ENV = "WARP_HARNESS_CACHE_DIR"
EXTRACT_SCRIPT = Path(__file__).with_name("extract.py")


def _dist_info_version() -> str | None:
    """Fast path: the first ``warp_lang-*.dist-info`` on ``sys.path``, as importlib.metadata finds it.

    ``import importlib.metadata`` alone costs about 90 ms (email, zipfile, csv...); this is a
    directory listing. Anything unusual (eggs, zip imports) is left to importlib.metadata.
    """
    for entry in sys.path:
        folder = Path(entry or ".")
        try:
            names = [
                n
                for n in os.listdir(folder)
                if n.lower().startswith("warp_lang-") and n.endswith(".dist-info")
            ]
        except OSError:
            continue
        for n in sorted(names):
            try:
                with open(folder / n / "METADATA", encoding="utf-8") as fh:
                    for line in fh:
                        if line.startswith("Version:"):
                            return line.split(":", 1)[1].strip()
                        if not line.strip():
                            break
            except OSError:
                continue
    return None


def installed_warp_version() -> str | None:
    """The installed ``warp-lang`` version, from package metadata only (Warp is not imported);
    None when it is not installed."""
    fast = _dist_info_version()
    if fast is not None:
        return fast
    import importlib.metadata

    try:
        return importlib.metadata.version("warp-lang")
    except importlib.metadata.PackageNotFoundError:
        return None


def cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return Path.home() / ".cache" / "warp-harness"


def folder_problem(folder: Path) -> str | None:
    """None when ``folder`` is missing (it is created 0700 when written) or a real folder of this
    user that no one else can write; else why it is not used (one line)."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"builtin table cache {folder}: {exc.strerror or exc}; not used"
    if not stat.S_ISDIR(st.st_mode):
        return f"builtin table cache {folder} is not a folder (a link or a file); not used"
    if st.st_uid != os.getuid():
        return f"builtin table cache {folder} belongs to another user (uid {st.st_uid}); not used"
    if st.st_mode & 0o022:
        return f"builtin table cache {folder} is writable by other users; not used"
    return None


class NotPrivate(PermissionError):
    """A cache file that is a link, not a regular file, another user's or writable by others."""


def read_private(path: Path) -> bytes:
    """The bytes of ``path`` when it is a regular file (not followed if a link) of this user that no
    one else can write; NotPrivate (an OSError) for any other file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotPrivate(f"{path} is not a regular file")
        if st.st_uid != os.getuid():
            raise NotPrivate(f"{path} belongs to another user (uid {st.st_uid})")
        if st.st_mode & 0o022:
            raise NotPrivate(f"{path} is writable by other users")
        return fh.read()


def cache_path(version: str) -> Path:
    safe = "".join(c if c.isalnum() or c in ".-_+" else "_" for c in version)
    return cache_dir() / f"builtins-{safe}.msgpack"


def _checked_path(path: Path) -> Path:
    return path.with_name(path.name + ".checked")


def _digest(payload: bytes) -> str:
    from warp_harness.digests import sha256

    return sha256(payload).hexdigest()


def _sidecar_fields(sidecar: Path) -> tuple[str, ...] | None:
    try:
        fields = tuple(read_private(sidecar).decode("ascii").split())
    except (OSError, UnicodeDecodeError):
        return None
    return fields if len(fields) == 3 else None


def cached_identity() -> str | None:
    """`BuiltinTable.identity` of the table `load_table` would give, without decoding it: known when
    the cache file for the installed Warp is the one its sidecar vouches for (same digest, same Warp,
    this extractor); None otherwise (then load the table and ask it). A `check` answered from its
    result cache needs only this."""
    version = installed_warp_version()
    if version is None:
        return None
    path = cache_path(version)
    if folder_problem(path.parent) is not None:
        return None
    fields = _sidecar_fields(_checked_path(path))
    if fields is None or fields[1] != version or fields[2] != _extractor_id():
        return None
    try:
        digest = _digest(read_private(path))
    except OSError:
        return None
    return f"cache:{version}:{digest}" if digest == fields[0] else None


_EXTRACTOR_ID: str | None = None


def _extractor_id() -> str:
    """Digest of ``extract.py`` (same as ``extract.extractor_id()``, which needs no import here)."""
    global _EXTRACTOR_ID
    if _EXTRACTOR_ID is None:
        from warp_harness.digests import sha256

        _EXTRACTOR_ID = sha256(EXTRACT_SCRIPT.read_bytes()).hexdigest()[:16]
    return _EXTRACTOR_ID
