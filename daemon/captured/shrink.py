"""Shrinking a failing captured launch: fewer launched threads, when the kernel's indexing allows.

A launch of ``dim = (n, ...)`` re-run with ``dim = (k, ...)`` runs the threads whose first index is
below ``k``, each exactly as in the full launch, when no thread reads what another thread's row
writes. That holds (`prefix_arrays`) when every access to every array the kernel writes (stores,
``+=``, ``wp.atomic_*``, and reads of the same array) has the first thread index as its first index:
``y[i] = ...``, ``out[i, j] += ...``, ``wp.atomic_add(acc, i, v)`` with ``i = wp.tid()`` or
``i, j = wp.tid()``. Arrays the kernel only reads may be indexed any way (``x[i + 2]``): they are
passed whole. Then the first ``k`` rows of the written arrays are judged against the first ``k`` rows
of the baseline, and the failing prefix is searched by bisection (`smallest_failing`): a failure of
the threads below ``k`` is a failure of every longer prefix.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

_ATOMICS = frozenset(
    {
        "atomic_add",
        "atomic_sub",
        "atomic_min",
        "atomic_max",
        "atomic_cas",
        "atomic_exch",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
    }
)
MAX_TRIALS = 12  # bisection steps: exact up to 4096 threads in the first dimension


def _kernel(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            found = node
    return found


def _tid_first(fn: ast.FunctionDef) -> str | None:
    """The name of the first thread index (``i`` of ``i = wp.tid()`` / ``i, j = wp.tid()``), when it
    is assigned once and never again."""
    first: str | None = None
    assigned: dict[str, int] = {}
    for node in ast.walk(fn):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
            call = node.value
            if (
                isinstance(call, ast.Call)
                and (getattr(call.func, "attr", None) or getattr(call.func, "id", None)) == "tid"
                and len(targets) == 1
            ):
                t = targets[0]
                if isinstance(t, ast.Name):
                    first = t.id if first is None else "\0"
                elif isinstance(t, ast.Tuple) and t.elts and isinstance(t.elts[0], ast.Name):
                    first = t.elts[0].id if first is None else "\0"
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.For):
            targets = [node.target]
        for t in targets:  # names bound (a store into `a[i]` binds nothing)
            for n in t.elts if isinstance(t, ast.Tuple | ast.List) else [t]:
                if isinstance(n, ast.Name):
                    assigned[n.id] = assigned.get(n.id, 0) + 1
    if first is None or first == "\0" or assigned.get(first, 0) != 1:
        return None
    return first


def _first_index(sub: ast.Subscript) -> ast.expr:
    s = sub.slice
    return s.elts[0] if isinstance(s, ast.Tuple) and s.elts else s


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def written_params(fn: ast.FunctionDef) -> set[str]:
    params = {a.arg for a in fn.args.args}
    out: set[str] = set()
    for node in ast.walk(fn):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        for t in targets:
            while isinstance(t, ast.Attribute):  # a[i].x = v
                t = t.value
            if isinstance(t, ast.Subscript):
                base = t.value
                while isinstance(base, ast.Subscript):  # a[i][j] = v
                    base = base.value
                if isinstance(base, ast.Name) and base.id in params:
                    out.add(base.id)
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in _ATOMICS and node.args and isinstance(node.args[0], ast.Name):
                if node.args[0].id in params:
                    out.add(node.args[0].id)
    return out


def prefix_arrays(text: str, kernel: str) -> frozenset[str] | None:
    """The arrays whose first ``k`` rows a ``dim[0] = k`` re-run decides, or None when the kernel's
    indexing does not allow fewer threads (see the module's docstring)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    fn = _kernel(tree, kernel)
    if fn is None:
        return None
    tid = _tid_first(fn)
    if tid is None:
        return None
    written = written_params(fn)
    if not written:
        return None
    allowed: set[int] = set()  # ids of the Name nodes of written arrays used in an allowed way
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in written:
            if not _is_name(_first_index(node), tid):
                return None
            allowed.add(id(node.value))
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in _ATOMICS and node.args and isinstance(node.args[0], ast.Name):
                if node.args[0].id in written:
                    if len(node.args) < 2 or not _is_name(node.args[1], tid):
                        return None
                    allowed.add(id(node.args[0]))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in written and node.attr == "shape":
                allowed.add(id(node.value))
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in written and id(node) not in allowed:
            return None  # passed to a function, aliased, ...
    return frozenset(written)


def smallest_failing(n: int, fails: Callable[[int], bool], max_trials: int = MAX_TRIALS) -> int:
    """The smallest ``k`` in ``[1, n]`` with ``fails(k)`` (``n`` itself is known to fail), by
    bisection; after ``max_trials`` the smallest failing ``k`` found so far."""
    lo, hi = 0, n  # fails(lo) is False (no threads), fails(hi) is True
    trials = 0
    while hi - lo > 1 and trials < max_trials:
        mid = (lo + hi) // 2
        trials += 1
        if fails(mid):
            hi = mid
        else:
            lo = mid
    return hi
