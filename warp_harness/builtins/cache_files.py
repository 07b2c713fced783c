"""Where the builtin table's cache lives and what names it, without decoding it or importing the table
code: the installed Warp version (package metadata; Warp is not imported), the cache file's path,
the extractor's id, and the ``.checked`` sidecar the loader writes beside a cache file whose records
passed its checks (their digest, the Warp version, the extractor). `cached_identity` is what a
result cache keys on when every file is answered from it.
"""

from __future__ import annotations

import os
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
        fields = tuple(sidecar.read_text(encoding="ascii").split())
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
    fields = _sidecar_fields(_checked_path(path))
    if fields is None or fields[1] != version or fields[2] != _extractor_id():
        return None
    try:
        digest = _digest(path.read_bytes())
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
