"""The daemon's cache of replay results: a save whose replay inputs did not change is not re-run.

A kernel's replay result (its records and failing cases) is kept under a key over everything that
decides it: the kernel's source digest (its ``def`` and the funcs it calls), the module's other
top-level code (constants, structs, imports), the captured launches (ids, dims, devices, argument
and baseline blobs: content addresses), the harness and Warp versions, the runtime options that
change a replay (devices, build mode, limits), and the tolerances. It lives in the user's private
cache folder (``user_state.workspace_state_dir(workspace, "replay")``), each entry signed with this
user's key; an entry that is unsigned, wrongly signed or for another key is ignored (the replay
runs), and nothing the workspace ships is read.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from warp_harness import user_state
from warp_harness.capture.store import KernelIndex
from warp_harness.daemon.options import RuntimeOptions

PURPOSE = "wh-replay"
KIND = "replay"
MAX_ENTRY_BYTES = 4 * 1024 * 1024
KEEP = 512  # entries per workspace (one per kernel and text a save replayed)
# a launch's fields that change what its replay sees (not when it was recorded or last used)
_LAUNCH_KEYS = ("id", "device", "dim", "block_dim", "args", "written", "baseline", "incomplete")
_OPTION_KEYS = (
    "devices", "mode", "fast_math", "lineinfo", "optimization_level", "max_unroll", "shrink",
    "require_hermetic",
)  # fmt: skip


def module_context(text: str) -> str:
    """A digest of the module's top-level code other than its kernels (a changed constant, struct
    or import reruns every replay of the module; an edit of another kernel does not)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return hashlib.sha256(text.encode()).hexdigest()
    h = hashlib.sha256()
    lines = text.splitlines()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and any(
            (
                getattr(d, "attr", None)
                or getattr(d, "id", None)
                or getattr(getattr(d, "func", None), "attr", None)
            )
            == "kernel"
            for d in stmt.decorator_list
        ):
            continue
        if isinstance(stmt, ast.If) and "__main__" in ast.dump(stmt.test):
            continue  # the script's own run: never part of a replay
        end = getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno
        h.update("\n".join(lines[stmt.lineno - 1 : end]).encode() + b"\0")
    return h.hexdigest()


def key(
    index: KernelIndex,
    source_digest: str,
    context: str,
    options: RuntimeOptions,
    tolerances: dict[str, Any],
    harness_version: str,
    warp_version: str,
) -> str:
    body = {
        "kernel": [index.path, index.name, source_digest, context],
        "launches": sorted(
            ({k: launch.get(k) for k in _LAUNCH_KEYS} for launch in index.launches),
            key=lambda x: str(x["id"]),
        ),
        "options": {k: getattr(options, k) for k in _OPTION_KEYS},
        "tolerances": tolerances,
        "versions": [harness_version, warp_version],
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _folder(workspace: Path) -> Path:
    return user_state.workspace_state_dir(workspace, KIND)


def load(workspace: Path, cache_key: str) -> dict[str, Any] | None:
    """The stored result for ``cache_key``: only one this user signed, for this key; else None."""
    try:
        path = _folder(workspace) / f"{cache_key}.json"
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except (OSError, user_state.StateUnusable):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, MAX_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("key") != cache_key:
        return None
    if not user_state.verify_json(data, purpose=PURPOSE):
        return None
    return data


def save(workspace: Path, cache_key: str, result: dict[str, Any]) -> None:
    """Store a result (signed); a cache that cannot be written is skipped, never an error."""
    try:
        folder = _folder(workspace)
        data = json.dumps(user_state.tagged_json({**result, "key": cache_key}, purpose=PURPOSE)).encode()
        if len(data) > MAX_ENTRY_BYTES:
            return
        tmp = folder / f".{cache_key}.{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, folder / f"{cache_key}.json")
        _prune(folder)
    except (OSError, user_state.StateUnusable, TypeError, ValueError):
        return


def _prune(folder: Path, keep: int = KEEP) -> None:
    """At most ``keep`` entries per workspace, the least recently written go first."""
    entries = list(folder.glob("*.json"))
    if len(entries) <= keep:
        return
    entries.sort(key=lambda f: f.stat().st_mtime)
    for old in entries[: len(entries) - keep]:
        old.unlink(missing_ok=True)
