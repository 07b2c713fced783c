"""Which files the daemon acts on, without importing them (and without Warp)."""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from warp_harness.contract import SIBLING_SUFFIXES
from warp_harness.safe_read import MAX_FILE_BYTES, read_regular_text
from warp_harness.workspace import IGNORED_DIRS

# Every pattern here is linear in the text: a saved file is hostile input, and an expression
# such as ``^\s*@`` (retried at each of 40,000 line starts, each scanning every newline after
# it) or ``word[^\n]*\bother`` (retried at each repetition of ``word`` on a 130 KB line) took
# seconds to minutes. ``^[^\S\n]*@`` finds the same decorators as ``^\s*@`` did (a match spanning
# blank lines also matches from the line of the ``@``), and "X ... Y on the rest of the line"
# is searched once per line from the first X on it (``_rest_of_line_has``).
_DECORATOR_RE = re.compile(
    r"@\s*(?:wp|warp)\s*\.\s*(?:kernel|func)\b|^[^\S\n]*@\s*kernel\b",
    re.MULTILINE,
)
_FROM_WARP_IMPORT_RE = re.compile(r"from\s+warp\s+import\s+")
_KERNEL_WORD_RE = re.compile(r"\bkernel\b")
_HARNESS_RE = re.compile(r"\bwarp_harness\b")
_CONTRACT_WORD_RE = re.compile(r"\b(?:import|Contract)\b")
_CONTRACT_CALL_RE = re.compile(r"\bContract\s*\(")

# a module larger than this is not read to decide whether it holds kernels, so the daemon
# does not check it: generated or hostile files must not cost it memory or time
MAX_SOURCE_BYTES = MAX_FILE_BYTES


def _rest_of_line_has(text: str, head: re.Pattern[str], tail: re.Pattern[str]) -> bool:
    """Whether ``tail`` occurs after a match of ``head`` on the line where that match ends
    (``head[^\\n]*tail`` without its quadratic backtracking). Only the first match ending on a
    line is searched from: a later one on the same line sees a part of the same rest."""
    searched_to = -1
    for match in head.finditer(text):
        start = match.end()
        if start <= searched_to:
            continue
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        if tail.search(text, start, end) is not None:
            return True
        searched_to = end
    return False


def is_ignored(path: Path, root: Path) -> bool:
    """Whether ``path`` lies in an ignored folder (VCS, caches, our own .warp-harness ...)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = path
    return any(part in IGNORED_DIRS for part in rel.parts[:-1])


def is_candidate_name(path: Path) -> bool:
    """A real Python module name: not an editor backup/swap/temp file."""
    name = path.name
    return (
        name.endswith(".py")
        and not name.startswith((".#", "#", "."))
        and "~" not in name
        and name != "__init__.py"
    )


def read_text(path: Path, max_bytes: int = MAX_SOURCE_BYTES) -> str | None:
    """The text of a regular file of at most ``max_bytes`` bytes; None for anything else (a
    FIFO, a device, a symlink to one, a larger file, an unreadable one). Never blocks."""
    try:
        return read_regular_text(path, max_bytes, errors="replace")
    except (OSError, ValueError):  # ValueError: a NUL byte in the name
        return None


def has_kernels(text: str) -> bool:
    return _DECORATOR_RE.search(text) is not None or _rest_of_line_has(
        text, _FROM_WARP_IMPORT_RE, _KERNEL_WORD_RE
    )


def has_contracts(text: str) -> bool:
    return _CONTRACT_CALL_RE.search(text) is not None or _rest_of_line_has(
        text, _HARNESS_RE, _CONTRACT_WORD_RE
    )


def kernel_module_for(path: Path) -> Path:
    """The kernel module a contract sibling belongs to (``foo_contract.py`` -> ``foo.py``)."""
    for suffix in SIBLING_SUFFIXES:
        if path.stem.endswith(suffix) and len(path.stem) > len(suffix):
            base = path.with_name(path.stem[: -len(suffix)] + ".py")
            if base.is_file():
                return base
    return path


def contract_siblings(path: Path) -> list[Path]:
    """``foo_contract.py`` / ``foo_contracts.py`` next to ``foo.py``, those that exist."""
    return [p for s in SIBLING_SUFFIXES if (p := path.with_name(path.stem + s + ".py")).is_file()]


def relevant(path: Path) -> Path | None:
    """The module to check when ``path`` is saved, or None when it holds no kernels or contracts."""
    if not is_candidate_name(path) or not path.is_file():
        return None
    text = read_text(path)
    if text is None:
        return None
    target = kernel_module_for(path)
    if target != path:
        return target
    if has_kernels(text) or has_contracts(text):
        return path
    return None


def walk(paths: Iterable[Path], root: Path | None = None) -> Iterator[Path]:
    """Every relevant module under ``paths`` (files are taken as given), sorted, once."""
    seen: set[Path] = set()
    for p in paths:
        p = p.resolve()
        base = root.resolve() if root else (p if p.is_dir() else p.parent)
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            if p.is_dir() and is_ignored(f, base):
                continue
            target = relevant(f)
            if target is not None and target not in seen:
                seen.add(target)
                yield target


def workspace_modules(root: Path, overrides: Mapping[str, Any] | None = None) -> list[Path]:
    """The kernel modules of a workspace, as `ci` would check them: the files `check` walks (ignored
    folders pruned, never entered; `exclude` of the settings applied) that hold kernels or contracts,
    a contract sibling standing for its kernel module. Sorted, once each."""
    from warp_harness.engine import iter_python_files

    seen: dict[Path, None] = {}
    for file in iter_python_files([root], overrides):
        target = relevant(file)
        if target is not None:
            seen.setdefault(target.resolve(), None)
    return sorted(seen)


# CPython's AST constructor keeps its recursion depth in state shared by every thread and checks
# it after each parse: two threads parsing at once can end in "SystemError: AST constructor
# recursion depth mismatch" (seen on 3.11.7 with the static tier's thread and the job thread;
# python/cpython#106905 is one way the check misfires). Every parse the daemon does in a thread
# of its own takes this lock.
AST_LOCK = threading.RLock()


def kernel_positions(source: str) -> dict[str, tuple[int, int, int]]:
    """{function name: (def line, name col, name end col)} of top-level functions."""
    out: dict[str, tuple[int, int, int]] = {}
    try:
        with AST_LOCK:
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):  # best effort
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            col = node.col_offset + len("def ")
            out.setdefault(node.name, (node.lineno, col, col + len(node.name)))
    return out
