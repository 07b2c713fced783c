"""`[tool.warp-harness]` settings, read from the nearest pyproject.toml and overridable.

Keys (all optional):

    select = ["WH0"]          # rule ids or prefixes to enable (default: all)
    ignore = ["WH012"]        # rule ids or prefixes to disable
    target = "sm_86"          # hardware profile the rules check against (default "sm_86")
    exclude = ["tests/data"]  # paths (relative to the pyproject) skipped when walking folders
    severity = { WH013 = "warning" }   # per-rule severity override
    debounce_ms = 100         # language server: delay before re-analysing after an edit
    daemon = true             # language server: connect to the daemon
    trust = false             # daemon: allowed to execute this workspace's code
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from warp_harness.record import Severity

DEFAULT_TARGET = "sm_86"


class ConfigError(ValueError):
    """A setting has the wrong type or an unknown value."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    target: str = DEFAULT_TARGET
    exclude: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    debounce_ms: int = 100
    daemon: bool = True
    trust: bool = False
    # folder holding the pyproject.toml the settings came from (None: defaults only)
    root: Path | None = None

    def rule_enabled(self, rule_id: str) -> bool:
        if self.select and not any(rule_id.startswith(s) for s in self.select):
            return False
        return not any(rule_id.startswith(s) for s in self.ignore)

    def merged(self, overrides: Mapping[str, Any]) -> Settings:
        """These settings with ``overrides`` (same keys as the table) applied on top."""
        return replace(self, **_validate(overrides, where="overrides"))


def _str_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _validate(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        key = key.replace("-", "_")
        if key in ("select", "ignore", "exclude"):
            out[key] = _str_list(value, key, where)
        elif key == "target":
            if not isinstance(value, str):
                raise ConfigError(f"{where}: `target` must be a string, got {value!r}")
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
                        f"{where}: `severity.{rule_id}` is {level!r}; use one of "
                        f"{', '.join(s.value for s in Severity)}"
                    ) from None
            out[key] = severities
        elif key == "debounce_ms":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"{where}: `debounce_ms` must be a non-negative integer, got {value!r}")
            out[key] = value
        elif key in ("daemon", "trust"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: `{key}` must be true or false, got {value!r}")
            out[key] = value
        # unknown keys are ignored so newer configs keep working with older versions
    return out


@lru_cache(maxsize=256)
def _read_pyproject(path: Path, mtime_ns: int, size: int) -> dict[str, Any] | None:
    """Parsed pyproject.toml (None when unreadable); keyed by mtime so edits are seen."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _pyproject_data(path: Path) -> dict[str, Any] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_pyproject(path, stat.st_mtime_ns, stat.st_size)


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` that has a [tool.warp-harness] table."""
    start = start.resolve()
    for folder in (start, *start.parents) if start.is_dir() else (start.parent, *start.parent.parents):
        candidate = folder / "pyproject.toml"
        data = _pyproject_data(candidate)
        if data is not None and isinstance(data.get("tool"), dict) and "warp-harness" in data["tool"]:
            return candidate
    return None


def load_settings(start: Path, overrides: Mapping[str, Any] | None = None) -> Settings:
    """Settings for a file or folder: nearest [tool.warp-harness], then ``overrides``."""
    settings = Settings()
    pyproject = find_pyproject(start)
    if pyproject is not None:
        data = _pyproject_data(pyproject) or {}
        table = data.get("tool", {}).get("warp-harness", {})
        if not isinstance(table, Mapping):
            raise ConfigError(f"{pyproject}: [tool.warp-harness] must be a table")
        settings = replace(settings, root=pyproject.parent, **_validate(table, where=str(pyproject)))
    if overrides:
        settings = settings.merged(overrides)
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
        pattern = pattern.rstrip("/")
        if rel.match(pattern) or any(p.as_posix() == pattern for p in (rel, *rel.parents)):
            return True
    return False
