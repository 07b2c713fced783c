"""Which of a workspace's files travel to a Ray cluster in its snapshot (daemon/ray_executor.py).

The code and the data its jobs need, nothing else: no hidden file or folder (``.env``,
``.netrc``, ``.pypirc``, ``.git``, ``.warp-harness``, ``.venv`` ...), nothing git ignores,
no ``__pycache__``, ``node_modules``, ``build``, ``dist``, ``*.egg-info`` or virtual environment,
no file over MAX_FILE_BYTES, no link that leads out of the workspace.

What git ignores: in a git work tree, git's own answer (``git ls-files --cached --others
--exclude-standard``: tracked files, and untracked ones that no ``.gitignore``,
``.git/info/exclude`` or ``core.excludesFile`` excludes), run with the repository's fsmonitor,
hooks and lazy fetching off. Outside one (or where git cannot answer), the workspace's
``.gitignore`` files, read with git's pattern rules (``#`` comments, ``!`` re-includes, a ``/``
anchors a pattern to its file's folder, a trailing ``/`` matches folders only, ``*``, ``?``,
``[...]``, ``**``); ``.git/info/exclude`` and the global excludes file are not read there.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist"})
MAX_FILE_BYTES = 8 * 1024 * 1024  # larger files are left out (data sets belong elsewhere)
# git as ci --changed-files runs it on a workspace it does not trust (daemon/ci.py): nothing the
# repository's config names runs for a listing
_GIT_CONFIG = ("core.fsmonitor=", "core.hooksPath=/dev/null", "core.pager=cat")
_GIT_ENV = {
    "GIT_ALLOW_PROTOCOL": "none",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
}


@dataclass
class Selection:
    """The files that travel, and how many were left out and why."""

    files: list[Path] = field(default_factory=list)
    hidden: int = 0  # hidden files and folders (a folder counts once)
    ignored: int = 0  # what git ignores (a folder counts once)
    large: int = 0  # files over MAX_FILE_BYTES
    ignore_source: str = "git"  # "git" or ".gitignore files"

    def left_out(self) -> str:
        parts = [
            f"{n} {what}"
            for n, what in ((self.hidden, "hidden"), (self.ignored, "ignored"), (self.large, "large"))
        ]
        return ", ".join(p for p in parts if not p.startswith("0 ")) or "nothing"


def select_files(workspace: Path) -> Selection:
    """The workspace's files that travel (sorted by path), see the module's docstring."""
    workspace = workspace.resolve()
    selection = Selection()
    ignored: Callable[[str, bool], bool] | None = _git_listing(workspace)
    if ignored is None:
        selection.ignore_source = ".gitignore files"
        ignored = _GitignoreFiles(workspace).ignored
    for folder, dirs, files in os.walk(workspace):
        here = Path(folder)
        rel_here = here.relative_to(workspace).as_posix()
        keep = []
        for d in sorted(dirs):
            rel = d if rel_here == "." else f"{rel_here}/{d}"
            if d.startswith("."):
                selection.hidden += 1
            elif d in SKIPPED_DIRS or d.endswith(".egg-info") or (here / d).is_symlink():
                continue
            elif (here / d / "pyvenv.cfg").exists():
                continue
            elif ignored(rel, True):
                selection.ignored += 1
            else:
                keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            rel = name if rel_here == "." else f"{rel_here}/{name}"
            path = here / name
            if name.startswith("."):
                selection.hidden += 1
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(workspace):
                continue
            try:
                st = path.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            if ignored(rel, False):
                selection.ignored += 1
            elif st.st_size > MAX_FILE_BYTES:
                selection.large += 1
            else:
                selection.files.append(path)
    return selection


def _git_listing(workspace: Path) -> Callable[[str, bool], bool] | None:
    """``ignored(relative path, is_folder)`` from git's listing; None outside a git work tree."""
    command = ["git", "--no-pager", *(p for c in _GIT_CONFIG for p in ("-c", c))]
    command += ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    try:
        out = subprocess.run(
            command,
            cwd=workspace,
            env={**os.environ, **_GIT_ENV},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    # paths relative to the workspace (git prints them relative to its working folder)
    files = {os.fsdecode(n) for n in out.stdout.split(b"\0") if n}
    folders = {parent for name in files for parent in _parents(name)}
    # a submodule (or an untracked nested repository) is listed as one entry: all of it counts
    nested = {name for name in files if (workspace / name).is_dir()}

    def ignored(rel: str, is_folder: bool) -> bool:
        if any(rel == n or rel.startswith(n + "/") for n in nested):
            return False
        return rel not in (folders if is_folder else files)

    return ignored


def _parents(name: str) -> list[str]:
    parts = name.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class _GitignoreFiles:
    """The workspace's ``.gitignore`` files (its own and its folders'), with git's rules: the
    last matching pattern wins, a deeper file's patterns after a shallower one's."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._patterns: dict[str, list[tuple[re.Pattern[str], bool, bool]]] = {}

    def _of(self, folder: str) -> list[tuple[re.Pattern[str], bool, bool]]:
        if folder not in self._patterns:
            path = self.workspace / folder / ".gitignore"
            try:
                text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
            except OSError:
                text = ""
            self._patterns[folder] = [p for line in text.splitlines()[:10_000] if (p := _pattern(line))]
        return self._patterns[folder]

    def ignored(self, rel: str, is_folder: bool) -> bool:
        parts = rel.split("/")
        verdict = False
        for depth in range(len(parts)):  # the .gitignore of every folder above, shallow first
            folder = "/".join(parts[:depth]) or "."
            below = "/".join(parts[depth:])
            for regex, negated, folders_only in self._of(folder):
                if folders_only and not is_folder:
                    continue
                if regex.fullmatch(below):
                    verdict = not negated
        return verdict


def _pattern(line: str) -> tuple[re.Pattern[str], bool, bool] | None:
    """One ``.gitignore`` line as (regex over a path below the file's folder, negated, folders only)."""
    line = line.rstrip(" ") if not line.endswith("\\ ") else line
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    if line.startswith("\\"):
        line = line[1:]
    folders_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line)
    regex = body if anchored else f"(?:.*/)?{body}"
    try:
        return re.compile(regex, re.DOTALL), negated, folders_only
    except re.error:
        return None


def _translate(glob: str) -> str:
    out: list[str] = []
    segments = glob.split("/")
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:.*/)?")
            continue
        out.append(_segment(segment) + ("" if last else "/"))
    return "".join(out)


def _segment(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = segment[i + 1 : end]
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                out.append(f"[{inner.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif c == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)
