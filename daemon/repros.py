"""The failure library: minimal failing cases in ``.warp-harness/repros/``, replayed as a
regression suite by ``warp-harness replay`` (daemon/replay_stored.py).

A case is one msgpack file holding the module path (relative to the workspace), the
kernel, device, size, seed, edge case, the failing rule and message, the runtime options,
and the generated inputs when they are small (else the seed regenerates them). One file
per (module, kernel, device, edge case, rule): a new failure of the same kind replaces the
old one, so the library does not grow with every save.

Nothing is ever written outside the workspace: the library folder is resolved (symlinks
included) and must lie inside it; cases whose module is outside the workspace are refused.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_harness.daemon import protocol
from warp_harness.daemon.cache import (
    OutsideWorkspaceError,
    atomic_write_bytes,
    read_msgpack_map,
    state_dir,
    warp_version,
)
from warp_harness.daemon.cache import inside as _inside
from warp_harness.daemon.results import FailingCase

if TYPE_CHECKING:
    pass

SCHEMA = 1
__all__ = [
    "LoadedCases",
    "OutsideWorkspaceError",
    "StoredCase",
    "library_dir",
    "load_all",
    "load_cases",
    "module_problem",
    "store",
]


def library_dir(workspace: Path, *, create: bool = False) -> Path:
    """``<workspace>/.warp-harness/repros``, checked to resolve inside the workspace."""
    workspace = workspace.resolve()
    folder = state_dir(workspace) / "repros"
    for p in (state_dir(workspace), folder):
        if (p.exists() or p.is_symlink()) and not _inside(p, workspace):
            raise OutsideWorkspaceError(
                f"{p} resolves outside the workspace {workspace}; refusing to write there"
            )
    if create:
        folder.mkdir(parents=True, exist_ok=True)
        if not _inside(folder, workspace):  # pragma: no cover - raced symlink
            raise OutsideWorkspaceError(f"{folder} resolves outside the workspace")
    return folder


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:60] or "_"


@dataclass(frozen=True)
class StoredCase:
    file: Path
    case: dict[str, Any]

    @property
    def label(self) -> str:
        c = self.case
        edge = f" [{c['edge_case']}]" if c.get("edge_case") else ""
        return f"{c.get('path')}::{c.get('kernel')} on {c.get('device')} size {c.get('size')}{edge}"


def store(workspace: Path, module: Path, failure: FailingCase, options: Mapping[str, Any]) -> Path:
    """Write one case; returns its file. Raises OutsideWorkspaceError when it would leave the workspace."""
    workspace = workspace.resolve()
    module = module.resolve()
    if not _inside(module, workspace):
        raise OutsideWorkspaceError(f"{module} is outside the workspace {workspace}; not storing its case")
    rel = module.relative_to(workspace).as_posix()
    folder = library_dir(workspace, create=True)
    identity = "|".join(
        str(x)
        for x in (
            rel,
            failure.kernel,
            failure.device,
            failure.edge_case,
            failure.rule,
        )
    )
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:12]
    file = folder / f"{_slug(module.stem)}__{_slug(failure.kernel)}__{digest}.msgpack"
    if not _inside(file.parent, workspace):  # pragma: no cover
        raise OutsideWorkspaceError(f"{file} resolves outside the workspace")
    case = {
        "schema": SCHEMA,
        "path": rel,
        "kernel": failure.kernel,
        "contract": failure.contract,
        "device": failure.device,
        "size": failure.size,
        "original_size": failure.original_size,
        "seed": failure.seed,
        "edge_case": failure.edge_case,
        "kind": failure.kind,
        "rule": failure.rule,
        "message": failure.message,
        "inputs": failure.inputs,
        "options": dict(options),
        "warp_version": warp_version(),
        "created": time.time(),
    }
    atomic_write_bytes(file, protocol.packb(case))
    return file


@dataclass(frozen=True)
class LoadedCases:
    cases: list[StoredCase]  # readable, with a module path checked to lie inside the workspace
    corrupt: list[Path]  # unreadable files, set aside
    refused: list[tuple[Path, str]]  # readable, but their module path is not allowed: (file, why)


def module_problem(workspace: Path, stored_path: str) -> str | None:
    """Why a case's ``path`` may not be run (None: it names a regular file inside the workspace).

    A library comes with the workspace, so a case could name ``../x.py`` or ``/home/u/x.py``:
    only a relative path that resolves (symlinks included) inside the workspace is run.
    """
    workspace = workspace.resolve()
    if not stored_path or "\x00" in stored_path:
        return "its module path is empty or not a path"
    if Path(stored_path).is_absolute():
        return f"its module path {stored_path!r} is absolute; only paths inside the workspace are run"
    module = workspace / stored_path
    if not _inside(module, workspace):
        return f"its module path {stored_path!r} leads outside the workspace {workspace}"
    try:
        is_file = module.resolve().is_file()
    except (OSError, RuntimeError):
        is_file = False
    if not is_file:
        return f"its module path {stored_path!r} is not a regular file in the workspace"
    return None


def load_cases(workspace: Path) -> LoadedCases:
    """Every case of the library, sorted by file name; each module path checked."""
    workspace = workspace.resolve()
    folder = library_dir(workspace)
    loaded = LoadedCases([], [], [])
    if not folder.is_dir():
        return loaded
    for file in sorted(folder.glob("*.msgpack")):
        data = read_msgpack_map(file, SCHEMA)
        if data is None or not isinstance(data.get("kernel"), str) or not isinstance(data.get("path"), str):
            loaded.corrupt.append(file)
            continue
        problem = module_problem(workspace, data["path"])
        if problem is not None:
            loaded.refused.append((file, f"not replayed: {problem}"))
            continue
        # what the worker imports: the checked, resolved module, relative to the workspace
        data["path"] = (workspace / data["path"]).resolve().relative_to(workspace).as_posix()
        loaded.cases.append(StoredCase(file, data))
    return loaded


def load_all(workspace: Path) -> tuple[list[StoredCase], list[Path]]:
    """(cases whose module path is allowed, sorted by file name; corrupt files that were set aside).
    Cases naming a module outside the workspace are left out: :func:`load_cases` lists them."""
    loaded = load_cases(workspace)
    return loaded.cases, loaded.corrupt
