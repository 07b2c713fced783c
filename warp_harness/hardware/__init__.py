"""Hardware profiles: data files (one TOML per target) the rules check kernels against.

`load_profile("sm_86")` reads the bundled ``sm_86.toml``; a path to a TOML file (for example
one written by ``warp-harness calibrate``) works too.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import Any

# The bundled profiles are package data beside this file (setuptools installs them as plain files).
# Read as paths, not through `importlib.resources`: importing it costs ~5 ms (tempfile, shutil,
# zipfile...), on the way to a language server's first diagnostics.
_FOLDER = Path(__file__).parent


class UnknownProfileError(ValueError):
    pass


@dataclass(frozen=True)
class HardwareProfile:
    """The limits and peak figures of a target device (a bundled or user TOML profile)."""

    name: str
    description: str
    device: str
    warp_size: int
    max_threads_per_block: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    shared_memory_banks: int
    sm_count: int
    peak_bandwidth_gbs: float
    peak_fp32_tflops: float
    peak_fp64_tflops: float
    peak_fp16_tflops: float
    source: str = ""
    arch: int | None = None

    @property
    def is_cuda(self) -> bool:
        return self.device == "cuda"

    @property
    def fp64_ratio(self) -> float:
        return self.peak_fp64_tflops / self.peak_fp32_tflops if self.peak_fp32_tflops else 1.0

    @property
    def shared_memory_limit(self) -> int | None:
        """Largest shared-memory request a block can make (opt-in), None when unlimited (CPU)."""
        return self.shared_memory_per_block_optin or self.shared_memory_per_block or None


def bundled_profiles() -> list[str]:
    return sorted(p.name[: -len(".toml")] for p in _FOLDER.iterdir() if p.name.endswith(".toml"))


def _from_toml(text: str, origin: str) -> HardwareProfile:
    if sys.version_info >= (3, 11):  # imported here: importing the package parses no TOML
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UnknownProfileError(f"hardware profile {origin} is not valid TOML: {exc}") from None
    except RecursionError:
        raise UnknownProfileError(f"hardware profile {origin} is nested too deeply to read") from None
    except ValueError as exc:  # Python's limit on the digits of an integer
        raise UnknownProfileError(f"hardware profile {origin} cannot be read: {str(exc)[:80]}") from None
    known = {f.name for f in fields(HardwareProfile)}
    missing = [
        f.name for f in fields(HardwareProfile) if f.name not in data and f.name not in ("source", "arch")
    ]
    if missing:
        raise UnknownProfileError(f"hardware profile {origin} lacks {', '.join(missing)}")
    for f in fields(HardwareProfile):
        value = data.get(f.name)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if f.name in data and (
            (f.type == "str" and not isinstance(value, str)) or (f.type in ("int", "float") and not number)
        ):
            raise UnknownProfileError(f"hardware profile {origin}: `{f.name}` must be a {f.type}")
    return HardwareProfile(**{k: v for k, v in data.items() if k in known})


@cache
def load_profile(name_or_path: str) -> HardwareProfile:
    if name_or_path.endswith(".toml"):
        from warp_harness.safe_read import MAX_CONFIG_BYTES, UnreadableFileError, read_regular_text

        path = Path(name_or_path)
        if not path.exists():
            raise UnknownProfileError(f"hardware profile file {name_or_path} does not exist")
        try:
            text = read_regular_text(path, MAX_CONFIG_BYTES)
        except UnreadableFileError as exc:
            raise UnknownProfileError(f"hardware profile {exc}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UnknownProfileError(f"hardware profile file {name_or_path} cannot be read: {exc}") from None
        return _from_toml(text, name_or_path)
    name = (
        name_or_path.replace("sm", "sm_").replace("sm__", "sm_")
        if name_or_path.startswith("sm")
        else name_or_path
    )
    resource = _FOLDER / f"{name}.toml"
    if not resource.is_file():
        raise UnknownProfileError(
            f"unknown target {name_or_path!r}; bundled profiles: {', '.join(bundled_profiles())}"
        )
    return _from_toml(resource.read_text(encoding="utf-8"), name)
