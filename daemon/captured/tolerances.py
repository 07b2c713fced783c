"""The behaviour diff's tolerances (WHD082): per dtype, per kernel, and where each came from.

    [tool.warp-harness.runtime.tolerances]        # the workspace's (the project's numeric contract)
    float32 = { rtol = 1e-3, atol = 1e-5 }        # every kernel's float32 arrays
    "integrate.float32" = [1e-2, 1e-4]            # kernel `integrate` only: [rtol, atol]

    warp-harness ci . --trust --replay-tolerances float32=1e-3,1e-5
    warp-harness daemon . --trust --replay-tolerances integrate.float32=1e-2,1e-4

The command line (the user: ``RuntimeOptions.replay_tolerances``) and the workspace may both set
them. A kernel's own entry beats a dtype-wide one; at the same level the user's beats the
workspace's. A workspace is untrusted, but its tolerance is its own numeric contract, so it is used;
every record judged with a workspace tolerance looser than the default says so (a loose tolerance
hides a changed result). Integers are compared exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.config import ConfigError, _warn_once, find_pyproject, pyproject_data
from warp_harness.daemon.captured.oracles import TOLERANCES

FLOAT_DTYPES = tuple(TOLERANCES)
DEFAULT = "default"
WORKSPACE = "workspace"
USER = "user"


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    source: str  # default | workspace | user
    key: str = ""  # the entry it came from ("float32", "integrate.float32")

    @property
    def pair(self) -> tuple[float, float]:
        return self.rtol, self.atol

    def looser_than_default(self, dtype: str) -> bool:
        rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
        return self.rtol > rtol or self.atol > atol

    def note(self, dtype: str) -> str:
        """What a record says about this tolerance ("" unless the workspace set one looser than the
        default)."""
        if self.source != WORKSPACE or not self.looser_than_default(dtype):
            return ""
        rtol, atol = TOLERANCES[dtype]
        return (
            f"tolerance rtol {self.rtol:g}, atol {self.atol:g} for {dtype} set by the workspace's "
            f"pyproject.toml (`{self.key}`), looser than the default rtol {rtol:g}, atol {atol:g}"
        )


def _pair(value: Any, where: str, key: str) -> tuple[float, float]:
    if isinstance(value, Mapping):
        unknown = set(value) - {"rtol", "atol"}
        if unknown or not value:
            raise ConfigError(f"{where}: tolerance `{key}` takes rtol and atol, got {sorted(value)}")
        rtol, atol = value.get("rtol", 0.0), value.get("atol", 0.0)
    elif isinstance(value, list | tuple) and len(value) == 2:
        rtol, atol = value
    else:
        raise ConfigError(f"{where}: tolerance `{key}` must be [rtol, atol] or {{ rtol = .., atol = .. }}")
    for v in (rtol, atol):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1e6 or v != v:
            raise ConfigError(f"{where}: tolerance `{key}` must be two numbers >= 0, got {value!r}")
    return float(rtol), float(atol)


def parse_table(table: Any, where: str) -> dict[str, tuple[float, float]]:
    """``{"float32": [rtol, atol], "kernel.float32": ...}`` validated (ConfigError with ``where``)."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: tolerances must be a table of DTYPE or KERNEL.DTYPE = [rtol, atol]")
    out: dict[str, tuple[float, float]] = {}
    for raw, value in table.items():
        key = str(raw)
        kernel, _, dtype = key.rpartition(".")
        if dtype not in FLOAT_DTYPES or (kernel and not kernel.isidentifier()):
            raise ConfigError(
                f"{where}: tolerance key `{key}` must be a float dtype ({', '.join(FLOAT_DTYPES)}) "
                "or KERNEL.DTYPE (integers are compared exactly)"
            )
        out[key] = _pair(value, where, key)
    return out


def parse_flags(specs: list[str]) -> dict[str, tuple[float, float]]:
    """``--replay-tolerances KEY=RTOL,ATOL`` (repeatable) as a table (ConfigError)."""
    table: dict[str, Any] = {}
    for spec in specs:
        key, eq, values = spec.partition("=")
        parts = values.split(",")
        if not eq or len(parts) != 2:
            raise ConfigError(
                f"--replay-tolerances {spec!r}: expected DTYPE=RTOL,ATOL or KERNEL.DTYPE=RTOL,ATOL"
            )
        try:
            table[key.strip()] = [float(parts[0]), float(parts[1])]
        except ValueError:
            raise ConfigError(f"--replay-tolerances {spec!r}: RTOL and ATOL must be numbers") from None
    return parse_table(table, "--replay-tolerances")


def workspace_table(workspace: Path) -> dict[str, tuple[float, float]]:
    """``[tool.warp-harness.runtime.tolerances]`` of the workspace's pyproject (a bad table is
    ignored, one line on stderr)."""
    try:
        path = find_pyproject(workspace)
        data = pyproject_data(path) if path is not None else None
        table = (data or {}).get("tool", {}).get("warp-harness", {}).get("runtime", {}).get("tolerances")
        if table is None:
            return {}
        return parse_table(table, f"{path} [tool.warp-harness.runtime.tolerances]")
    except (ConfigError, AttributeError) as exc:
        _warn_once(f"{exc}; the default tolerances are used")
        return {}


@dataclass(frozen=True)
class Tolerances:
    workspace: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    user: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def get(self, kernel: str, dtype: str) -> Tolerance:
        for key in (f"{kernel}.{dtype}", dtype):
            for source, table in ((USER, self.user), (WORKSPACE, self.workspace)):
                if key in table:
                    rtol, atol = table[key]
                    return Tolerance(rtol, atol, source, key)
        rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
        return Tolerance(rtol, atol, DEFAULT, dtype)

    def identity(self) -> dict[str, Any]:
        """What a cached replay's key holds of them."""
        return {
            "workspace": {k: list(v) for k, v in sorted(self.workspace.items())},
            "user": {k: list(v) for k, v in sorted(self.user.items())},
        }


def load(workspace: Path, user: Mapping[str, Any] | None) -> Tolerances:
    return Tolerances(
        workspace_table(workspace),
        {str(k): (float(v[0]), float(v[1])) for k, v in (user or {}).items()},
    )
