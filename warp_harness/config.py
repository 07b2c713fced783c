"""`[tool.warp-harness]` settings, read from the nearest pyproject.toml and overridable.

Keys (all optional):

    select = ["WH0"]          # rule ids or prefixes to enable (default: all)
    extend-select = ["WH016"] # added to `select` (when `select` is set)
    ignore = ["WH012"]        # rule ids or prefixes to disable
    per-file-ignores = { "tests/*.py" = ["WH012"], "__init__.py" = ["WH0"] }
                              # glob (as `exclude`) -> rule ids or prefixes disabled in those files
    target = "sm_86"          # hardware profile the rules check against (default "sm_86")
    exclude = ["tests/data"]  # paths (relative to the pyproject) skipped when walking folders
    severity = { WH013 = "warning" }   # per-rule severity override
    debounce_ms = 100         # language server: delay before re-analysing after an edit
    daemon = true             # language server: connect to the daemon
    trust = false             # daemon: allowed to execute this workspace's code

Where settings come from (git's ``safe.directory`` reasoning): the search walks up from the
file or folder checked and stops at the repository root (the first folder holding ``.git``);
nothing above a repository is read. A ``pyproject.toml`` is taken only when the current user
(or root) owns it, nobody else can write it (other users; the group too, unless it is the
user's own primary group), its folder is owned by the user or root, and no folder from it up
to ``/`` can be written by others unless that folder is sticky (like /tmp, where others cannot
replace what the user owns). A refused file stops the search: the defaults apply, and one line
on stderr says why. A file that does not parse as TOML is skipped; one that breaks the
parser's limits (nesting, integer size) or is larger than 2 MB is a ConfigError.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from warp_harness.record import Severity

DEFAULT_TARGET = "sm_86"


# the selector of every rule, as Ruff's `ALL`
ALL = "ALL"
# the overrides key of `check --config FILE`: that file's settings instead of the pyproject found
CONFIG_FILE = "config_file"


class ConfigError(ValueError):
    """A setting has the wrong type or an unknown value."""


@dataclass(frozen=True)
class Settings:
    """The effective settings of a check (from pyproject.toml / .warp-harness.toml and overrides)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    target: str = DEFAULT_TARGET
    exclude: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    debounce_ms: int = 100
    daemon: bool = True
    trust: bool = False
    # folder holding the pyproject.toml the settings came from (None: defaults only)
    root: Path | None = None

    def rule_enabled(self, rule_id: str) -> bool:
        """Whether ``rule_id`` runs: selected (no `select`, ``ALL``, the id or a prefix of it) and not
        ignored (the same, ``ALL`` ignoring every rule)."""
        if self.select and not any(s == ALL or rule_id.startswith(s) for s in self.select):
            return False
        return not any(s == ALL or rule_id.startswith(s) for s in self.ignore)

    def merged(self, overrides: Mapping[str, Any]) -> Settings:
        """These settings with ``overrides`` (same keys as the table) applied on top."""
        return _extended(_applied(self, _validate(overrides, where="overrides")))


def _applied(settings: Settings, validated: dict[str, Any]) -> Settings:
    """``settings`` with a validated table applied: `extend_exclude` adds to `exclude` (the table's own
    when it sets one too), every other key replaces."""
    extend = validated.pop("extend_exclude", ())
    settings = replace(settings, **validated)
    return replace(settings, exclude=(*settings.exclude, *extend)) if extend else settings


def _extended(settings: Settings) -> Settings:
    """`extend_select` folded into `select` (when one is set: an empty `select` is every rule), so
    that `select` alone says what runs (and keys caches)."""
    if not settings.extend_select:
        return settings
    select = (*settings.select, *settings.extend_select) if settings.select else ()
    return replace(settings, select=select, extend_select=())


# the language server's delay: above a minute an edit would never seem to be analysed
MAX_DEBOUNCE_MS = 60_000


def show_value(value: Any) -> str:
    """``repr(value)`` cut to one short line (a hostile table can hold huge or deep values)."""
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:77] + "..."


def _str_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {show_value(value)}")
    return tuple(value)


def _exclude_list(value: Any, where: str) -> tuple[str, ...]:
    patterns = _str_list(value, "exclude", where)
    for pattern in patterns:
        if not pattern.strip().rstrip("/"):
            raise ConfigError(f"{where}: `exclude` holds an empty pattern {pattern!r}; remove it")
    return patterns


def _per_file_ignores(value: Any, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: `per-file-ignores` must be a table of glob = [rule ids], got {show_value(value)}"
        )
    table: dict[str, tuple[str, ...]] = {}
    for glob, codes in value.items():
        if not isinstance(glob, str) or not glob.strip().rstrip("/"):
            raise ConfigError(
                f"{where}: `per-file-ignores` holds an empty pattern {show_value(glob)}; remove it"
            )
        table[glob] = tuple(
            c.upper() for c in _str_list(codes, f"per-file-ignores.{show_value(glob)}", where)
        )
    return table


def _with_file_ignores(settings: Settings, path: Path) -> Settings:
    """``settings`` with the per-file-ignores whose glob matches ``path`` added to `ignore`."""
    extra = [
        code
        for glob, codes in settings.per_file_ignores.items()
        if is_excluded(path, settings, (glob,))
        for code in codes
    ]
    return replace(settings, ignore=(*settings.ignore, *extra)) if extra else settings


def _validate(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for raw, value in table.items():
        key = str(raw).replace("-", "_")
        if key in ("select", "ignore", "extend_select"):
            out[key] = _str_list(value, key, where)
        elif key == "per_file_ignores":
            out[key] = _per_file_ignores(value, where)
        elif key in ("exclude", "extend_exclude"):
            out[key] = _exclude_list(value, where)
        elif key == "target":
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(
                    f"{where}: `target` must be a profile name or a .toml path, got {show_value(value)}"
                )
            out[key] = value
        elif key == "severity":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: `severity` must be a table of rule id = severity")
            severities: dict[str, Severity] = {}
            for rule_id, level in value.items():
                try:
                    severities[str(rule_id).upper()] = Severity(str(level))
                except ValueError:
                    raise ConfigError(
                        f"{where}: `severity.{show_value(rule_id)}` is {show_value(level)}; use one of "
                        f"{', '.join(s.value for s in Severity)}"
                    ) from None
            out[key] = severities
        elif key == "debounce_ms":
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_DEBOUNCE_MS:
                raise ConfigError(
                    f"{where}: `debounce_ms` must be an integer from 0 to {MAX_DEBOUNCE_MS}, "
                    f"got {show_value(value)}"
                )
            out[key] = value
        elif key in ("daemon", "trust"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{key}` must be true or false, got {show_value(value)}")
            out[key] = value
        elif key == CONFIG_FILE:
            continue  # which file `load_settings` reads: not a setting
        elif key != "runtime":  # [tool.warp-harness.runtime]: daemon/options.py reads it
            # still ignored (a newer config keeps working with an older version), but said once
            _warn_once(f"{where}: unknown key `{raw}` in [tool.warp-harness]{_did_you_mean(key)}; ignored")
    return out


_KNOWN_KEYS = (
    "select ignore extend_select per_file_ignores exclude extend_exclude target severity debounce_ms daemon "
    "trust runtime"
).split()


def _did_you_mean(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
    return f" (did you mean `{close[0].replace('_', '-')}`?)" if close else ""


def _check_target(target: str, where: str) -> None:
    from warp_harness.hardware import load_profile

    try:
        load_profile(target)
    except Exception as exc:  # unknown name, missing or malformed file: one line, exit 2
        raise ConfigError(f"{where}: `target`: {exc}") from None


def _confined_target(target: str, pyproject: Path) -> str:
    """A workspace's ``target`` that names a ``.toml`` file, as an absolute path (a relative one is
    relative to the pyproject's folder); ConfigError when it leads (``..``, an absolute path, a
    link) outside the workspace: the repository holding the pyproject, else its folder. A profile
    elsewhere is named by the user (``--target``, the editor's settings), not by a repository."""
    if not target.endswith(".toml"):
        return target
    folder = pyproject.parent
    workspace = (repository_root(folder) or folder).resolve()
    try:
        resolved = (folder / target).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        resolved = None
    if resolved is None or not resolved.is_relative_to(workspace):
        raise ConfigError(
            f"{pyproject}: `target` {show_value(target)} is outside the workspace {workspace}; "
            "a profile elsewhere can be named with --target or in the editor's settings"
        )
    return str(resolved)


# ---------------------------------------------------------------- reading a pyproject.toml


@dataclass(frozen=True)
class _Parsed:
    """A configuration file's parsed TOML, or why it was skipped or refused."""

    data: dict[str, Any] | None  # None: not TOML (skipped)
    error: str | None = None  # set: the file breaks a limit (a ConfigError for every caller)


@lru_cache(maxsize=256)
def _read_pyproject(path: Path, mtime_ns: int, size: int, ino: int) -> _Parsed:
    """Parsed pyproject.toml; keyed by mtime, size and inode so edits are seen."""
    from warp_harness.safe_read import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_text

    try:
        text = read_regular_text(path, MAX_CONFIG_BYTES)
    except UnreadableFileError as exc:
        return _Parsed(None, exc.reason)
    except (OSError, UnicodeDecodeError):
        return _Parsed(None)
    if sys.version_info >= (3, 11):  # imported here: a check with no pyproject.toml never parses TOML
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        return _Parsed(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return _Parsed(None)
    except RecursionError:
        return _Parsed(None, "nested too deeply to read")
    except ValueError as exc:  # Python's limit on the digits of an integer, and the like
        return _Parsed(None, f"not readable: {str(exc)[:100]}")


def _parsed(path: Path) -> _Parsed:
    try:
        st = path.stat()
    except OSError:
        return _Parsed(None)
    return _read_pyproject(path, st.st_mtime_ns, st.st_size, st.st_ino)


def pyproject_data(path: Path) -> dict[str, Any] | None:
    """The parsed file (None: not TOML); ConfigError when it breaks a limit (size, nesting)."""
    parsed = _parsed(path)
    if parsed.error is not None:
        raise ConfigError(f"{path}: {parsed.error}")
    return parsed.data


def _has_table(data: dict[str, Any] | None) -> bool:
    return data is not None and isinstance(data.get("tool"), dict) and "warp-harness" in data["tool"]


# ---------------------------------------------------------------- whose file is it


def _others_can_write(st: os.stat_result) -> bool:
    """Writable by other users: by everyone, or by a group other than the user's own."""
    if st.st_mode & stat.S_IWOTH:
        return True
    return bool(st.st_mode & stat.S_IWGRP) and st.st_gid != os.getegid()


def _owned_by_us(st: os.stat_result) -> bool:
    return st.st_uid in (os.geteuid(), 0)


def unsafe_reason(path: Path) -> str | None:
    """Why another local user could have written or could replace ``path`` (None: they cannot)."""
    try:
        link = path.lstat()
        target = path.stat()
    except OSError as exc:
        return f"cannot be checked ({exc.strerror or exc})"
    for st, what in ((link, "it"), (target, "the file it leads to")):
        if not _owned_by_us(st):
            return f"{what} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}) or root"
    if _others_can_write(target):
        return f"other users can write it (mode {stat.S_IMODE(target.st_mode):o})"
    folder = path.parent.absolute()
    try:
        folder_st = folder.stat()
    except OSError as exc:
        return f"its folder cannot be checked ({exc.strerror or exc})"
    if not _owned_by_us(folder_st):
        return f"its folder {folder} is owned by uid {folder_st.st_uid}"
    for current in (folder, *folder.parents):
        try:
            st = current.stat()
        except OSError as exc:
            return f"{current} cannot be checked ({exc.strerror or exc})"
        # a sticky folder (like /tmp) lets others add files but not replace the user's
        if _others_can_write(st) and not st.st_mode & stat.S_ISVTX:
            return f"other users can replace it: {current} is writable by them and not sticky"
    return None


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        print(f"warp-harness: {message}", file=sys.stderr, flush=True)


def _search_folders(start: Path) -> Iterator[Path]:
    """``start``'s folder and those above it, up to the repository root (a folder holding .git)."""
    start = start.resolve()
    folder = start if start.is_dir() else start.parent
    for current in (folder, *folder.parents):
        yield current
        if (current / ".git").exists():
            return


def repository_root(start: Path) -> Path | None:
    """The first folder at or above ``start`` that holds ``.git`` (None: not in a repository)."""
    for folder in _search_folders(start):
        if (folder / ".git").exists():
            return folder
    return None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.warp-harness] table,
    within the repository, and that only the user (or root) can have written.

    A pyproject.toml that other users could have written ends the search (None, one warning
    line); one that breaks a reading limit raises ConfigError.
    """
    for folder in _search_folders(start):
        candidate = folder / "pyproject.toml"
        if not (candidate.exists() or candidate.is_symlink()):
            continue
        reason = unsafe_reason(candidate)
        if reason is not None:
            _warn_once(f"ignoring {candidate}: {reason}; using the default settings")
            return None
        if _has_table(pyproject_data(candidate)):
            return candidate
    return None


def load_settings(start: Path, overrides: Mapping[str, Any] | None = None) -> Settings:
    """Settings for a file or folder: nearest [tool.warp-harness], then ``overrides``."""
    settings = Settings()
    explicit = overrides.get(CONFIG_FILE) if overrides else None
    pyproject = Path(explicit) if explicit else find_pyproject(start)
    if explicit:  # the user named it (`check --config`): trusted, and the only file read
        overrides = {k: v for k, v in (overrides or {}).items() if k != CONFIG_FILE}
    if pyproject is not None:
        data = pyproject_data(pyproject) if explicit else pyproject_data(pyproject) or {}
        if data is None:
            missing = explicit and not pyproject.is_file()
            raise ConfigError(f"{pyproject}: {'no such file' if missing else 'not a TOML file'}")
        # a pyproject.toml holds [tool.warp-harness]; any other file named by --config is the table itself
        named_table = explicit and pyproject.name != "pyproject.toml"
        table = data if named_table else data.get("tool", {}).get("warp-harness", {})
        if not isinstance(table, Mapping):
            raise ConfigError(f"{pyproject}: [tool.warp-harness] must be a table")
        settings = _extended(
            _applied(replace(settings, root=pyproject.parent), _validate(table, where=str(pyproject)))
        )
        if "target" in table and not (overrides and "target" in overrides):
            settings = replace(settings, target=_confined_target(settings.target, pyproject))
            _check_target(settings.target, str(pyproject))
    if overrides:
        settings = settings.merged(overrides)
    if settings.per_file_ignores and not start.is_dir():
        settings = _with_file_ignores(settings, start)
    return settings


def is_excluded(path: Path, settings: Settings, patterns: Iterable[str] | None = None) -> bool:
    """Whether ``path`` falls under one of the exclude patterns (relative to the settings' root)."""
    patterns = settings.exclude if patterns is None else patterns
    if not patterns:
        return False
    resolved = path.resolve()
    base = settings.root or Path.cwd()
    try:
        rel = resolved.relative_to(base.resolve())
    except ValueError:
        rel = resolved
    for pattern in patterns:
        pattern = pattern.strip().rstrip("/")
        if not pattern:  # PurePath.match raises on an empty pattern
            continue
        if rel.match(pattern) or any(p.as_posix() == pattern for p in (rel, *rel.parents)):
            return True
    return False
