"""The methods attrs writes for lsprotocol's classes, and `dataclasses` for the analysis stack's, compiled
once per user and kept.

Before an empty pygls server can answer `initialize`, importing pygls and lsprotocol costs it ~400 ms of
CPU, and over half of that is attrs compiling the source of the methods it writes for lsprotocol's ~570
classes (`attr._make._compile_and_eval`, ~590 scripts). Python keeps no bytecode for code that is not in
a file, so every start compiled them again. `kept` keeps it: while pygls is imported, a script already
compiled at an earlier start is evaluated from its code object, read from the user's private cache
folder (the folder `warp_harness.user_state.user_cache_root` names: never the workspace), the others are
compiled as attrs would and written there later (`Kept.save`, off the way to the first diagnostics).
The same code runs either way: a code object is what `compile` made of the same text and file name, with
the same `__future__` flags, by the same interpreter (the file is named by its bytecode's magic number and
the flags). Another attrs or lsprotocol writes other scripts: compiled, and the file written anew.

The start-up process (`server/start_up_process.py`) does the same for the methods `dataclasses` writes
while it imports the analysis stack (`kept_dataclasses`: ~30 ms of its ~100 ms of CPU before it can judge
a kernel).

Anything unexpected (another attrs, a file that is not ours or not sound) and the code is compiled as
always. The file holds code this process runs: it is read only from a folder and file of this user that
no one else can write, as Python's own bytecode caches are.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import CodeType
from typing import Any

# the cache folder's name under the user's cache root, and the most a kept file may hold
FOLDER = "server-code"
MAX_BYTES = 32 * 1024 * 1024
# a new file is written when more than this share of the scripts was compiled afresh (a first start, a new
# lsprotocol): a script or two that differ at every start (attrs writes some with the names in a set's
# order) are compiled each time, not worth rewriting ~2 MB for
RENEW_SHARE = 0.05

_Key = tuple[str, str]  # a script and its file name


class Kept:
    """The code objects of one start: those read, and those compiled afresh."""

    def __init__(self, path: Path | None, stored: dict[_Key, CodeType]) -> None:
        self.path = path
        self.stored = stored
        self.used: dict[_Key, CodeType] = {}
        self.compiled = 0  # scripts compiled afresh

    def code(self, script: str, filename: str, flags: int) -> CodeType:
        key = (script, filename)
        code = self.stored.get(key)
        if code is None:
            code = self.stored[key] = compile(script, filename, "exec", flags, True)
            self.compiled += 1
        self.used[key] = code
        return code

    def save(self) -> None:
        """Write the scripts of this start (dropping those no longer written) when enough were new; once."""
        used, self.used, self.stored = self.used, {}, {}
        path, self.path = self.path, None
        if path is None or not used or self.compiled <= RENEW_SHARE * len(used):
            return
        try:
            _write_private(path, _dumps(used))
        except (OSError, ValueError):
            pass


@contextmanager
def kept(root: Path | None = None) -> Iterator[Kept]:
    """While this is entered, attrs evaluates the code objects kept from earlier starts (where its
    internals are the ones this knows); ``root``: the cache root (default: the user's)."""
    make, original = _compile_and_eval()
    if make is None or original is None:
        yield Kept(None, {})
        return
    flags = _future_flags(original)
    path = _kept_file(root, flags)
    keeper = Kept(path, _read_private(path))

    def compile_and_eval(
        script: str,
        globs: dict[str, Any] | None,
        locs: Mapping[str, object] | None = None,
        filename: str = "",
    ) -> None:
        eval(keeper.code(script, filename, flags), globs, locs)

    make._compile_and_eval = compile_and_eval
    try:
        yield keeper
    finally:
        make._compile_and_eval = original


@contextmanager
def kept_dataclasses(root: Path | None = None) -> Iterator[Kept]:
    """While this is entered, the methods `dataclasses` writes (``exec`` of their source: ~420 for the
    analysis stack's classes, ~30 ms of the start-up process's ~100 ms of imports) are evaluated from the
    code objects kept from earlier starts. One thread only: the module's ``exec`` is shadowed meanwhile."""
    import dataclasses

    if "exec" in vars(dataclasses):  # not the module this knows
        yield Kept(None, {})
        return
    flags = _future_flags(dataclasses.dataclass)
    path = _kept_file(root, flags, "dataclasses")
    keeper = Kept(path, _read_private(path))

    def exec_kept(source: Any, globs: Any = None, locs: Any = None, /, **options: Any) -> None:
        if isinstance(source, str):  # as `exec` compiles a text: file "<string>", the caller's flags
            source = keeper.code(source, "<string>", flags)
        exec(source, globs, locs, **options)

    dataclasses.exec = exec_kept  # type: ignore[attr-defined]
    try:
        yield keeper
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]


def _compile_and_eval() -> tuple[Any, Callable[..., None] | None]:
    """attrs' module that compiles its scripts, and the function that does (None: not the one known)."""
    try:
        import attr._make as make
    except ImportError:
        return None, None
    original = getattr(make, "_compile_and_eval", None)
    code = getattr(original, "__code__", None)
    if code is None or code.co_varnames[:4] != ("script", "globs", "locs", "filename"):
        return None, None
    return make, original


def _future_flags(function: Callable[..., Any]) -> int:
    """The `__future__` flags ``function``'s module compiles under: its `compile` calls inherit them."""
    import __future__

    flags: int = function.__code__.co_flags
    return sum(
        feature.compiler_flag
        for name in __future__.all_feature_names
        if flags & (feature := getattr(__future__, name)).compiler_flag
    )


def _kept_file(root: Path | None, flags: int, writer: str = "attrs") -> Path:
    """The file of ``writer``'s scripts for this interpreter's bytecode and these `__future__` flags (a code
    object is keyed by its script and file name: another attrs or lsprotocol writes other scripts)."""
    # importlib.util's MAGIC_NUMBER, from the module the interpreter starts with (importlib.util is not
    # imported by then unless an editable install's path hook did it; tests/server/test_start_up_imports.py)
    from _frozen_importlib_external import MAGIC_NUMBER

    root = root if root is not None else cache_root()
    return root / FOLDER / f"{writer}-{MAGIC_NUMBER.hex()}-{flags:x}.marshal"


def cache_root() -> Path:
    """The user's private cache folder, as `warp_harness.user_state.user_cache_root` names it (that module
    imports what this start must not wait for)."""
    override = os.environ.get("WARP_HARNESS_CACHE_DIR", "")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "warp-harness"


def _ours(info: os.stat_result, kind: Callable[[int], bool]) -> bool:
    """Of this user, of ``kind``, and writable by no one else."""
    return kind(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _read_private(path: Path) -> dict[_Key, CodeType]:
    """The code objects kept in ``path``; none where it or its folders are not this user's alone."""
    import marshal

    try:
        if not all(_ours(os.lstat(folder), stat.S_ISDIR) for folder in (path.parent.parent, path.parent)):
            return {}
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if not _ours(info, stat.S_ISREG) or info.st_size > MAX_BYTES:
            return {}
        with os.fdopen(fd, "rb") as file:
            fd = -1
            loaded = marshal.loads(file.read(MAX_BYTES + 1))
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    finally:
        if fd >= 0:
            os.close(fd)
    if not isinstance(loaded, dict):
        return {}
    return {
        key: code
        for key, code in loaded.items()
        if isinstance(code, CodeType)
        and isinstance(key, tuple)
        and len(key) == 2
        and all(isinstance(part, str) for part in key)
    }


def _dumps(codes: dict[_Key, CodeType]) -> bytes:
    import marshal

    return marshal.dumps(codes)


def _write_private(path: Path, data: bytes) -> None:
    """``data`` into ``path`` (0600) through a new file renamed over it, in folders made 0700 and checked."""
    for folder in (path.parent.parent, path.parent):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _ours(os.lstat(folder), stat.S_ISDIR):
            raise ValueError(f"{folder} is not this user's alone")
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


__all__ = ["Kept", "cache_root", "kept", "kept_dataclasses"]
