"""Which kernel a capture belongs to, read from source text alone (no import, no execution).

A kernel is known by its module path (relative to the workspace), its name and a digest of its
source: the text of its ``def`` (decorators excluded, dedented) plus the text of every function of
the same file it reaches by calls (its ``@wp.func`` helpers and theirs, every definition of each).
The recorder (in the user's process) and the replay (in the harness) compute it the same way from
the file's text, so a saved edit of the kernel or of a helper it reaches changes the digest.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class KernelSource:
    name: str
    line: int  # the ``def`` line
    col: int
    end_col: int
    digest: str
    # array parameters the kernel only ever stores into (``a[i] = ...``): poisoned before a replay
    write_only: frozenset[str]


def _segment(lines: list[str], node: ast.AST) -> str:
    start = getattr(node, "lineno", 1)
    end = getattr(node, "end_lineno", start) or start
    return textwrap.dedent("\n".join(lines[start - 1 : end]))


def _is_kernel(node: ast.FunctionDef) -> bool:
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "kernel":
            return True
    return False


def write_only_arrays(node: ast.FunctionDef) -> frozenset[str]:
    """Parameters used only as ``p[...] = value`` targets: never read, never passed on."""
    params = {a.arg for a in node.args.args}
    stored: set[str] = set()
    store_values: set[int] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    stored.add(target.value.id)
                    # in ``p[i] = v`` the AST loads the name p: that load is the store itself
                    store_values.add(id(target.value))
    read = {
        n.id
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in store_values
    }
    return frozenset((stored & params) - read)


def _called(node: ast.FunctionDef) -> list[str]:
    """The names ``node`` calls (``f(...)``, ``m.f(...)``: "f"), sorted."""
    return sorted(
        {
            c.func.id if isinstance(c.func, ast.Name) else c.func.attr
            for c in ast.walk(node)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name | ast.Attribute)
        }
    )


def kernel_sources(text: str) -> dict[str, KernelSource]:
    """Every ``@wp.kernel`` function of a module's text, by name (a name defined more than once: its
    digest covers every definition, its location is the last one's)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    funcs: dict[str, list[ast.FunctionDef]] = {}
    kernels: list[ast.FunctionDef] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            funcs.setdefault(node.name, []).append(node)
            if _is_kernel(node):
                kernels.append(node)
    by_name: dict[str, list[ast.FunctionDef]] = {}
    for node in kernels:
        by_name.setdefault(node.name, []).append(node)
    out: dict[str, KernelSource] = {}
    for kernel_name, unordered in by_name.items():
        nodes = sorted(unordered, key=lambda n: (n.lineno, n.col_offset))
        # a name defined more than once (warp-lang's `global_kernel` redefined; a factory's `def k` in
        # each branch of an `if`): every definition, in order, since a launch may have run any of them
        h = hashlib.sha256(_segment(lines, nodes[0]).encode())
        for other in nodes[1:]:
            h.update(b"\0def\0" + _segment(lines, other).encode())
        # every function of the file the kernel reaches by calls, at any depth, and each definition of
        # a name defined more than once (Warp keeps overloads and redefinitions): an edit of any of
        # them is an edit of what the kernel runs
        todo, seen = sorted({n for node in nodes for n in _called(node)}), {kernel_name}
        while todo:
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            for helper in funcs.get(name, []):
                if helper not in nodes:
                    h.update(b"\0" + name.encode() + b"\0" + _segment(lines, helper).encode())
                    todo += [n for n in _called(helper) if n not in seen]
        node = nodes[-1]
        line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
        col = line.find(node.name)
        out[node.name] = KernelSource(
            name=node.name,
            line=node.lineno,
            col=max(col, 0),
            end_col=max(col, 0) + len(node.name),
            digest=h.hexdigest()[:32],
            # what every definition only writes: a replay poisons it before the launch
            write_only=frozenset.intersection(*(write_only_arrays(n) for n in nodes)),
        )
    return out


def _nested_defs(body: list[ast.stmt], name: str) -> list[ast.FunctionDef]:
    """The ``def name`` of a function body at any depth of its statements, not inside another
    function or class (``hermetic_factory._functions`` reads a qualname the same way)."""
    out: list[ast.FunctionDef] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef):
            if node.name == name:
                out.append(node)
        elif not isinstance(node, ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


def factory_chain(
    tree: ast.Module, qualname: str, definition: tuple[int, int] | None = None
) -> list[ast.FunctionDef] | None:
    """The defs ``qualname`` (``make.<locals>.k``) names, outermost first: the factories, then the
    kernel; None when a part of it names no single nested def. ``definition`` (``definition_of``):
    the kernel is the ``i``-th of the ``n`` defs of its name in its factory (warp-lang's
    ``create_kernel_cond``: a ``def k`` in each branch of an ``if``), None when they are not ``n``."""
    parts = qualname.split(".<locals>.")
    if len(parts) < 2:
        return None
    body: list[ast.stmt] = tree.body
    chain: list[ast.FunctionDef] = []
    for depth, part in enumerate(parts):
        found = _nested_defs(body, part)
        if definition is not None and depth == len(parts) - 1:
            if len(found) != definition[1]:
                return None
            found = [found[definition[0]]]
        if len(found) != 1:
            return None
        chain.append(found[0])
        body = found[0].body
    return chain


def definition_of(record: object) -> tuple[int, int] | None:
    """``(i, n)`` of a closure record's ``definition``: the launch ran the ``i``-th (from 0) of the
    ``n`` defs of its kernel's name (in its factory, or at its module's top level); None when the
    record says none or is not two such ints (a record is data: anything else is no definition)."""
    found = record.get("definition") if isinstance(record, dict) else None
    if (
        isinstance(found, list)
        and len(found) == 2
        and all(type(x) is int for x in found)
        and 0 <= found[0] < found[1]
        and 2 <= found[1] <= 4096
    ):
        return found[0], found[1]
    return None


def definition_in(tree: ast.Module, qualname: str, first_line: int) -> tuple[int, int] | None:
    """Which def of the kernel ``qualname`` a kernel object came from, when its name has more than
    one (``definition_of``): ``(i, n)``, the one whose first line (its first decorator's, as Python's
    ``co_firstlineno`` counts) is ``first_line`` among the ``n`` defs of that name at the module's top
    level (no ``<locals>``) or in its factory. None when the name has one def, or none matches."""
    parts = qualname.split(".<locals>.")
    body: list[ast.stmt] = tree.body
    for part in parts[:-1]:
        found = _nested_defs(body, part)
        if len(found) != 1:
            return None
        body = found[0].body
    name = parts[-1]
    if len(parts) == 1:
        candidates = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == name]
    else:
        candidates = _nested_defs(body, name)
    if len(candidates) < 2:
        return None
    for i, node in enumerate(candidates):
        if first_line in (node.lineno, min([d.lineno for d in node.decorator_list] + [node.lineno])):
            return i, len(candidates)
    return None


def factory_digest(tree: ast.Module, qualname: str, definition: tuple[int, int] | None = None) -> str | None:
    """A digest of the code of the functions that make the kernel ``qualname`` (``make.<locals>.k``)
    other than the kernel itself: the outermost factory's text, its decorators aside, with the
    kernel's parameters and body left out (its decorators kept). The capture records it beside the
    values the factory computed for the kernel's decorator (``module_options=...``); the replay takes
    those values only while the edited text gives the same digest. None when the qualname names no
    single nested def."""
    chain = factory_chain(tree, qualname, definition)
    if chain is None:
        return None
    outer = chain[0]
    kernel = chain[-1]
    saved = (outer.decorator_list, kernel.args, kernel.body, kernel.returns)
    try:
        outer.decorator_list = []
        kernel.args = ast.arguments([], [], None, [], [], None, [])
        kernel.body, kernel.returns = [ast.Pass()], None
        dumped = ast.dump(outer)
    finally:
        outer.decorator_list, kernel.args, kernel.body, kernel.returns = saved
    return hashlib.sha256(dumped.encode()).hexdigest()[:32]
