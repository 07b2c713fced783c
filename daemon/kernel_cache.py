"""Project-local Warp kernel cache: ``.warp-harness/kernels/<key>/``.

Warp names its cache folders with 7 hex digits of the module hash (collisions and stale
binaries were reported upstream, warp#1696/#1711). We give every (module, device) build
its own folder whose key is a SHA-256 over

- Warp's full module hash (source of every kernel and called function, constants, types),
- every resolved module option (mode, fast_math, fuse_fp, lineinfo, optimization_level,
  max_unroll, enable_backward, block_dim, verify_fp, compiler flags, ...),
- the Warp version and the harness's cache schema version,
- the device kind and its architecture (CUDA ``sm_XX``; the CPU's machine architecture),

and point ``warp.config.kernel_cache_dir`` at it just before ``Module.load``. Warp's own
cache logic then only ever sees one build per folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
from pathlib import Path
from typing import Any

SCHEMA = 1
_BINARY_SUFFIXES = (".o", ".cubin", ".ptx", ".so", ".dll")


def cache_root(workspace: Path) -> Path:
    return workspace / ".warp-harness" / "kernels"


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_jsonable(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def build_key(
    module_hash: bytes | str,
    resolved_options: dict[str, Any],
    warp_version: str,
    device_kind: str,
    arch: str | int | None,
) -> str:
    """The folder name of one build (64 hex digits)."""
    payload = {
        "schema": SCHEMA,
        "module_hash": module_hash.hex() if isinstance(module_hash, bytes) else module_hash,
        "options": _jsonable(resolved_options),
        "warp": warp_version,
        "device": device_kind,
        "arch": str(arch) if arch is not None else platform.machine(),
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def has_binary(folder: Path) -> bool:
    """Whether a build folder already holds a compiled binary and its meta file."""
    if not folder.is_dir():
        return False
    names = [p.name for p in folder.rglob("*") if p.is_file()]
    return any(n.endswith(".meta") for n in names) and any(n.endswith(_BINARY_SUFFIXES) for n in names)


def describe_device(device: Any) -> tuple[str, str | int | None]:
    """(kind, arch) of a Warp device object: ("cpu", None) or ("cuda", 90)."""
    if getattr(device, "is_cuda", False):
        return "cuda", getattr(device, "arch", None)
    return "cpu", None


def prune(workspace: Path, keep: int = 200) -> int:
    """Remove the oldest build folders beyond ``keep``; returns how many were removed."""
    root = cache_root(workspace)
    if not root.is_dir():
        return 0
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    removed = 0
    for folder in folders[keep:]:
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


def folder_for(workspace: Path, key: str) -> Path:
    folder = cache_root(workspace) / key
    os.makedirs(folder, exist_ok=True)
    return folder
