"""Settings sent by the editor: `initializationOptions` and `workspace/didChangeConfiguration`.

Both carry the keys of `[tool.warp-harness]` (snake_case; camelCase spellings such as
`debounceMs` are accepted too), either flat or under `settings`, `warpHarness` or
`warp-harness`. They override the nearest pyproject's table, key by key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from warp_harness.config import ConfigError, Settings

KEYS = ("select", "ignore", "target", "severity", "debounce_ms", "daemon", "trust")
SECTION = "warpHarness"
_NESTS = ("settings", SECTION, "warp-harness", "warp_harness")


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower().replace("-", "_")


def client_table(payload: Any) -> Mapping[str, Any] | None:
    """The settings table inside a client payload (flat or nested), None when there is none."""
    table: Any = payload
    for _ in range(3):
        if not isinstance(table, Mapping):
            return None
        nested = next((table[k] for k in _NESTS if isinstance(table.get(k), Mapping)), None)
        if nested is None:
            break
        table = nested
    return table if isinstance(table, Mapping) else None


def client_overrides(payload: Any) -> dict[str, Any]:
    """The override table inside a client payload ({} when there is none).

    Raises ConfigError for a value of the wrong type (the caller reports it and keeps the
    previous settings); unknown keys are ignored, `null` means "not set".
    """
    table = client_table(payload)
    if table is None:
        return {}
    picked = {_snake(str(k)): v for k, v in table.items() if v is not None and _snake(str(k)) in KEYS}
    if "target" in picked and picked["target"] == "":
        del picked["target"]
    for key in ("select", "ignore"):
        if picked.get(key) == []:
            del picked[key]
    Settings().merged(picked)  # raises ConfigError on a wrong type
    check_target(picked.get("target"))
    return picked


def check_target(target: str | None) -> None:
    if target is None:
        return
    from warp_harness.hardware import load_profile

    try:
        load_profile(target)
    except Exception as exc:
        raise ConfigError(f"unknown target profile {target!r} ({exc})") from None
