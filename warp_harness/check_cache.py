"""A persistent cache of `check` results: an unchanged file under unchanged settings is not analysed again.

Entries live in a private per-user folder ($XDG_CACHE_HOME/warp-harness, else ~/.cache/warp-harness),
never inside the workspace: a workspace is untrusted (docs/reliability.md) and must not be able to
plant a cached "clean" result. The folder is created 0700 and used only while it is owned by us and
nobody else can write it; an entry is read only when it is a regular file we own, under a size cap,
through msgpack with container limits; anything that does not decode to records is discarded.

An entry's name is a hash of everything that can change a file's records: its bytes and displayed
path, the settings it is checked under (every field: select, ignore, target, severities...), the
resolved hardware profile, the installed code of warp-harness (version and a fingerprint of its
files, so rules and builtin profiles count) and the builtin table's identity. What a file's records also
depend on, the other modules its launches resolved against (the workspace model), is stored in the
entry: a digest per module consulted ("" for one that did not exist), compared with the modules' current
digests before the entry is used.

`check` analyses a file inside its workspace model (launches resolved across modules); `ci` and the
daemon's static tier analyse each file alone (`check_alone`). Their records can differ, so the two
are keyed apart (``scope``) in the one cache: a `ci` re-run reads what the last `ci` wrote.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack

from warp_harness.config import Settings
from warp_harness.digests import blake2b
from warp_harness.record import Fix, Location, Record, Related, Severity, Stage, TextEdit

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable
    from warp_harness.engine import KeepLines
    from warp_harness.output.model import FileResult

# bump when the entry layout changes
ENTRY_FORMAT = 2
# one file's records: far above anything real (a 10 MB file with a record on every line is ~60 MB
# of source, its records a fraction); larger entries are treated as corrupt
MAX_ENTRY_BYTES = 16 * 1024 * 1024


class CacheUnusable(Exception):
    """The cache folder cannot be trusted or created; ``str()`` says why (one line)."""


def default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "warp-harness"


def _private_dir(path: Path) -> None:
    """Create ``path`` (0700) if missing; raise CacheUnusable unless it is a folder we own that
    no one else can write (a link is not followed: lstat)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise CacheUnusable(f"cache folder {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CacheUnusable(f"cache folder {path} is not a folder")
    if st.st_uid != os.getuid():
        raise CacheUnusable(f"cache folder {path} belongs to another user")
    if st.st_mode & 0o022:
        raise CacheUnusable(f"cache folder {path} is writable by other users")


def _code_fingerprint() -> str:
    """Size and mtime of every file of the installed warp-harness that can change a record."""
    import importlib.util

    import warp_harness

    # the rules' folder found, not imported: a check with nothing to analyse never imports them
    rules = importlib.util.find_spec("warp_harness.rules")
    digest = blake2b(warp_harness.__version__.encode(), digest_size=32)
    for origin in (warp_harness.__file__, rules.origin if rules is not None else None):
        if origin is None:
            continue
        root = Path(origin).parent
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".toml", ".msgpack")):
                    st = os.stat(os.path.join(folder, name))
                    digest.update(f"{folder}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return digest.hexdigest()


# --- records <-> msgpack, exactly (tuples stay tuples, enums and priority survive) -------------


def _pack_value(value: Any) -> Any:
    kind = type(value)
    if value is None or kind in (bool, int, float, str):
        return value
    if kind is tuple:
        return {"t": [_pack_value(v) for v in value]}
    if kind is list:
        return {"l": [_pack_value(v) for v in value]}
    if kind is dict:
        return {"d": [[_pack_value(k), _pack_value(v)] for k, v in value.items()]}
    raise TypeError(f"cannot cache a {kind.__name__}")


def _unpack_value(value: Any) -> Any:
    if isinstance(value, dict):
        ((tag, items),) = value.items()
        if tag == "t":
            return tuple(_unpack_value(v) for v in items)
        if tag == "l":
            return [_unpack_value(v) for v in items]
        if tag == "d":
            return {_unpack_value(k): _unpack_value(v) for k, v in items}
        raise ValueError(f"unknown tag {tag!r}")
    if isinstance(value, list):
        raise ValueError("untagged array")
    return value


def _pack_location(loc: Location) -> list[Any]:
    return [loc.path, loc.line, loc.col, loc.end_line, loc.end_col, loc.kernel]


def _pack_record(r: Record) -> list[Any]:
    fix = None
    if r.fix is not None:
        edits = [[e.line, e.col, e.end_line, e.end_col, e.new_text] for e in r.fix.edits]
        fix = [r.fix.title, edits, r.fix.safe]
    related = [[_pack_location(x.location), x.message] for x in r.related]
    return [
        r.stage.value,
        r.rule,
        r.severity.value,
        _pack_location(r.location),
        r.message,
        _pack_value(r.expected),
        _pack_value(r.actual),
        r.hint,
        fix,
        related,
        r.priority,
    ]


def _unpack_record(d: list[Any]) -> Record:
    stage, rule, severity, loc, message, expected, actual, hint, fix, related, priority = d
    return Record(
        stage=Stage(stage),
        rule=rule,
        severity=Severity(severity),
        location=Location(*loc),
        message=message,
        expected=_unpack_value(expected),
        actual=_unpack_value(actual),
        hint=hint,
        fix=None if fix is None else Fix(fix[0], tuple(TextEdit(*e) for e in fix[1]), fix[2]),
        related=tuple(Related(Location(*x[0]), x[1]) for x in related),
        priority=priority,
    )


# module name -> its digest when the records were computed ("" when it did not exist)
Dependencies = Mapping[str, str]


def encode_records(records: tuple[Record, ...], deps: Dependencies | None = None) -> bytes | None:
    """The records (and the modules they depend on) as an entry, or None when they cannot be stored
    exactly (then nothing is cached)."""
    pairs = sorted((deps or {}).items())
    try:
        data = msgpack.packb(
            [ENTRY_FORMAT, [_pack_record(r) for r in records], [list(p) for p in pairs]], use_bin_type=True
        )
    except (TypeError, ValueError, OverflowError):
        return None
    decoded = decode_entry(data)
    return data if decoded is not None and decoded == (records, dict(pairs)) else None


def decode_records(data: bytes) -> tuple[Record, ...] | None:
    """The records of an entry, or None for anything that is not a well-formed entry."""
    entry = decode_entry(data)
    return entry[0] if entry is not None else None


def decode_entry(data: bytes) -> tuple[tuple[Record, ...], dict[str, str]] | None:
    """(records, dependencies) of an entry, or None for anything that is not a well-formed entry."""
    if len(data) > MAX_ENTRY_BYTES:
        return None
    try:
        entry = msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            max_str_len=1024 * 1024,
            max_bin_len=0,
            max_array_len=1_000_000,
            max_map_len=64,
            max_ext_len=0,
        )
        if not (isinstance(entry, list) and len(entry) == 3 and entry[0] == ENTRY_FORMAT):
            return None
        records = tuple(_unpack_record(d) for d in entry[1])
        deps = {}
        for pair in entry[2]:
            module, digest = pair
            if not (isinstance(module, str) and isinstance(digest, str)):
                return None
            deps[module] = digest
    except Exception:  # a corrupt entry is a miss, whatever it holds
        return None
    return (records, deps) if all(_well_typed(r) for r in records) else None


def _well_typed(r: Record) -> bool:
    loc = r.location
    return (
        isinstance(r.rule, str)
        and isinstance(r.message, str)
        and isinstance(loc.path, str)
        and type(loc.line) is int
        and type(loc.col) is int
        and type(r.priority) is int
    )


class CheckCache:
    """Records of checked files, by a key over content, settings and versions (see the module doc)."""

    def __init__(self, root: Path | None = None, *, table_identity: str = "") -> None:
        self.root = root or default_cache_dir()
        _private_dir(self.root)
        self.entries = self.root / f"check-v{ENTRY_FORMAT}"
        _private_dir(self.entries)
        self._write_gitignore()
        self._base = blake2b(
            f"{ENTRY_FORMAT}\0{_code_fingerprint()}\0{table_identity}\0{sys.version_info[:2]}".encode()
        ).digest()
        self._profiles: dict[str, str] = {}
        self._folders: set[Path] = set()  # the entry folders this run made sure of (`put`)
        self.hits = 0
        self.misses = 0

    def _write_gitignore(self) -> None:
        # as Ruff's cache: a cache folder placed in a repository ignores itself
        gitignore = self.root / ".gitignore"
        if not os.path.lexists(gitignore):
            try:
                gitignore.write_text("# automatically created by warp-harness\n*\n", encoding="utf-8")
            except OSError:
                pass

    def _profile(self, target: str) -> str:
        """The resolved hardware profile (a .toml target's contents count, not just its name)."""
        if not target.endswith(".toml"):
            # a bundled profile (or an unknown name) is read from the package's own .toml files, which the
            # code fingerprint covers: the name says it all, and loading it would cost a small check ~7 ms
            return f"bundled: {target}"
        if target not in self._profiles:
            from warp_harness.hardware import load_profile

            try:
                self._profiles[target] = repr(load_profile(target))
            except Exception as exc:  # the analysis reports it; the key still differs per message
                self._profiles[target] = f"error: {exc}"
        return self._profiles[target]

    def key(self, data: bytes, path: str, settings: Settings, scope: str = "") -> str:
        """``scope``: how the records were computed ("": in the workspace model, as `check` does;
        `ALONE`: the file alone); entries of one scope are never read for another."""
        digest = blake2b(self._base, digest_size=32)
        # every field: one added later (per-file ignores, ...) keys the cache without a change here
        fields: tuple[str, ...] = (path, repr(settings), self._profile(settings.target))
        if scope:  # `check`'s keys stay as they were
            fields = (*fields, scope)
        digest.update(repr(fields).encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.entries / key[:2] / key[2:]

    def get(self, key: str, current: Callable[[str], str | None] | None = None) -> tuple[Record, ...] | None:
        """The records stored under ``key``; None when there are none or when a module they depend on
        changed (``current``: a module's digest now, "" when it does not exist, None when it cannot be
        told; without it, an entry with dependencies is a miss). ``current`` is called only for an entry
        with dependencies."""
        entry = self._read(self._entry(key))
        records: tuple[Record, ...] | None = None
        if entry is not None:
            stored, deps = entry
            if not deps or (current is not None and all(current(m) == d for m, d in deps.items())):
                records = stored
        if records is None:
            self.misses += 1
        else:
            self.hits += 1
        return records

    def _read(self, path: Path) -> tuple[tuple[Record, ...], dict[str, str]] | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > MAX_ENTRY_BYTES:
                self._discard(path)
                return None
            data = os.read(fd, MAX_ENTRY_BYTES + 1)
        except OSError:
            return None
        finally:
            os.close(fd)
        entry = decode_entry(data)
        if entry is None:
            self._discard(path)
        return entry

    @staticmethod
    def _discard(path: Path) -> None:
        try:
            os.unlink(path)
        except OSError:
            pass

    def put(self, key: str, records: tuple[Record, ...], deps: Dependencies | None = None) -> None:
        """Store ``records`` under ``key``, valid while the modules of ``deps`` keep their digests."""
        data = encode_records(records, deps)
        if data is None:
            return
        entry = self._entry(key)
        folder = entry.parent
        try:
            if folder not in self._folders:  # one mkdir per folder and run, not one per entry
                folder.mkdir(mode=0o700, exist_ok=True)
                self._folders.add(folder)
            try:
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            except FileNotFoundError:  # the folder was removed since
                folder.mkdir(mode=0o700, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
                os.replace(tmp, entry)  # readers see the old entry or the whole new one
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # a full disk or a vanished folder costs the next run a re-check, nothing else


def open_cache(table_identity: str, warn: Callable[[str], None] | None = None) -> CheckCache | None:
    """The user's check cache, or None (with one warning line) when its folder cannot be trusted."""
    try:
        return CheckCache(table_identity=table_identity)
    except CacheUnusable as exc:
        if warn is not None:
            warn(f"warp-harness: warning: result cache not used: {exc}")
        return None


# the scope of records computed for a file alone, without the workspace model (`ci`, the daemon)
ALONE = "alone"


def check_alone(
    path: Path,
    overrides: Mapping[str, Any] | None,
    display_path: str,
    cache: CheckCache | None,
    settings: Settings | None = None,
    keep_lines: KeepLines = True,
) -> FileResult:
    """`engine.check_file(path, overrides, display_path)` (the file analysed alone), its records read
    from ``cache`` when it holds them for these bytes, path and settings, and stored there otherwise.
    The same FileResult either way: the source lines are cut from the bytes as the analysis cuts them
    (``keep_lines``: all of them, only those the records point at, or none: `engine.check_bytes`)."""
    from warp_harness.engine import INTERNAL_RULE, check_bytes, check_file, kept_lines
    from warp_harness.output.model import FileResult

    if cache is None:

        def fresh(data: bytes, shown: str, settings: Settings, table: BuiltinTable | None) -> FileResult:
            return check_bytes(data, shown, settings, table, keep_lines=keep_lines)

        return check_file(path, overrides, display_path=display_path, analyse=fresh, settings=settings)

    def analyse(data: bytes, shown: str, settings: Settings, table: BuiltinTable | None) -> FileResult:
        key = cache.key(data, shown, settings, ALONE)
        records = cache.get(key)
        if records is not None:
            from warp_harness.model.source import decode_source

            lines = None
            if keep_lines:
                text, _ = decode_source(data)
                if text is not None and not records and keep_lines == "records":
                    lines = ("",) * len(text.splitlines())  # what kept_lines gives, not cut line by line
                elif text is not None:
                    lines = kept_lines(text.splitlines(keepends=True), records, keep_lines)
            return FileResult(shown, records, lines)
        handed = [data]  # not held here while it is analysed (`engine.check_bytes`)
        del data
        result = check_bytes(handed.pop(), shown, settings, table, keep_lines=keep_lines)
        # a rule that crashed (out of memory, say) is not a verdict on the text: checked again next time
        if not any(r.rule == INTERNAL_RULE for r in result.records):
            cache.put(key, result.records)
        return result

    return check_file(path, overrides, display_path=display_path, analyse=analyse, settings=settings)


def table_identity(table: BuiltinTable | None = None) -> str:
    """What the result cache keys on for the builtin table: ``table``'s identity, or (None) that of the
    table `load_table` would give, known without loading it when its cache file is vouched for."""
    from warp_harness.builtins.cache_files import cached_identity

    identity = cached_identity() if table is None else table.identity
    if identity is None:
        from warp_harness.builtins.loader import load_table

        identity = load_table().identity
    return identity


_shared: list[CheckCache | None] = []


def shared_cache(warn: Callable[[str], None] | None = None) -> CheckCache | None:
    """This process's `open_cache` (opened on first use; None when its folder cannot be trusted), for
    callers that check one file at a time (the daemon's static tier)."""
    if not _shared:
        _shared.append(open_cache(table_identity(), warn))
    return _shared[0]


__all__ = [
    "ALONE",
    "MAX_ENTRY_BYTES",
    "CacheUnusable",
    "CheckCache",
    "check_alone",
    "decode_entry",
    "decode_records",
    "default_cache_dir",
    "encode_records",
    "open_cache",
    "shared_cache",
    "table_identity",
]
