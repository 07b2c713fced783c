"""What of a Warp function's body Warp compiles: branches it drops at code generation, abstract bodies.

Warp folds an ``if`` whose condition is a constant when it generates code (``Adjoint.emit_If``: a condition
``Var`` with a ``constant``) and emits only the taken branch; the other one is never type-checked, so it may
hold code Warp would reject (a builtin of a newer Warp, a call valid only for another specialisation of a
kernel factory). The conditions it folds: ``wp.static(expr)`` (evaluated in Python with the kernel's
globals and closure), a literal (``if False:``) and a bare name that is no local of the function (a module
global or a closure variable; Warp captures it as a constant). It folds nothing else: ``if not FLAG:``,
``if N > 3:`` and ``if wp.static(A) and b:`` compile both branches. Conditional expressions
(``a if wp.static(F) else b``) are folded the same way.

When the checker knows the condition's value (module constants, ``wp.constant``, literals, closure variables
of a kernel factory assigned a foldable value once), only the taken branch is compiled: the other is hidden.
When it cannot know it (a flag computed at import time, a factory's parameter), either branch may be the one
compiled, and neither is the code Warp builds for certain: both are hidden, so no rule claims Warp rejects
code in them.

A ``@wp.func`` whose body is only ``raise NotImplementedError`` (or ``...`` / ``pass``, after an optional
docstring) is an abstract method that subclasses override; Warp builds a function only when a kernel calls
it, and nothing calls the base one: its whole body is hidden.

The rules read the result through `index.body_index` (and ``walk_body``), which `build_model` points at the
view of each kernel and function without all of these; a rule about silent bugs or performance may read
`index.possible_body_index` instead, which keeps the branches the checker cannot decide (one of them runs);
statement walkers can ask `KernelDef.live`.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from warp_harness.model.constants import Value, fold_static
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import full_body_index
from warp_harness.model.walk import walk


@dataclass(frozen=True)
class StaticBranch:
    """An ``if`` (or conditional expression) Warp resolves when it compiles; ``taken``: True (the body),
    False (the ``else``), None (the checker cannot tell which)."""

    node: ast.If | ast.IfExp
    taken: bool | None


@dataclass(frozen=True, eq=False)
class CompiledView:
    """The parts of a function body Warp does not compile for certain (the ids of their root nodes: statements
    of a dropped branch, the dropped operand of a conditional expression, an abstract body's statements),
    and why."""

    hidden: frozenset[int]
    branches: tuple[StaticBranch, ...] = ()
    abstract: bool = False
    # the part of ``hidden`` Warp certainly drops (not the branches the checker cannot decide)
    dropped: frozenset[int] = frozenset()


def is_abstract_body(node: ast.FunctionDef) -> bool:
    """The body is a docstring at most and one ``raise NotImplementedError``, ``...`` or ``pass``."""
    body = list(node.body)
    if len(body) == 2 and _is_docstring(body[0]):
        body = body[1:]
    if len(body) != 1:
        return False
    stmt = body[0]
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
        return True
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def function_locals(node: ast.FunctionDef) -> frozenset[str]:
    """Parameters and every name the body binds (Warp variables, never captured constants); kept per node."""
    cached = _LOCALS.get(node)
    if cached is None:
        args = node.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [a for a in (args.vararg, args.kwarg) if a is not None]
        names = {a.arg for a in every}
        names.update(n.id for n in full_body_index(node).of(ast.Name) if type(n.ctx) is not ast.Load)
        cached = _LOCALS[node] = frozenset(names)
    return cached


_LOCALS: weakref.WeakKeyDictionary[ast.FunctionDef, frozenset[str]] = weakref.WeakKeyDictionary()


def closure_values(
    enclosing: Sequence[ast.FunctionDef | ast.AsyncFunctionDef],
    constants: Mapping[str, Value],
    imports: ImportMap,
) -> dict[str, Value]:
    """The names a function nested in ``enclosing`` (outermost first) sees with a known value: the module's
    constants, shadowed by each enclosing function's parameters and locals, the locals assigned once a
    foldable value (``block = 16`` in a kernel factory) added."""
    env = dict(constants)
    for function in enclosing:
        args = function.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [a for a in (args.vararg, args.kwarg) if a is not None]
        for arg in every:
            env.pop(arg.arg, None)
        assigned: dict[str, list[ast.expr | None]] = {}
        for stmt in _own_statements(function.body):
            for target, value in _bindings(stmt):
                assigned.setdefault(target, []).append(value)
        for name, values in assigned.items():
            folded = (
                fold_static(values[0], env, imports) if len(values) == 1 and values[0] is not None else None
            )
            if folded is None:
                env.pop(name, None)
            else:
                env[name] = folded
    return env


def _own_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a function's own scope (nested blocks included, nested functions and classes not)."""
    stack = list(reversed(body))
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("orelse", "finalbody", "body"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(reversed([s for s in block if isinstance(s, ast.stmt)]))
        for handler in getattr(stmt, "handlers", None) or []:
            stack.extend(reversed(handler.body))
        for case in getattr(stmt, "cases", None) or []:
            stack.extend(reversed(case.body))


def _bindings(stmt: ast.stmt) -> Iterator[tuple[str, ast.expr | None]]:
    """(name, value) for each name ``stmt`` binds in its scope; value None when it is not a plain
    ``name = value``."""
    if isinstance(stmt, ast.Assign):
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                yield target.id, stmt.value
            else:
                yield from ((n.id, None) for n in walk(target) if isinstance(n, ast.Name))
    elif isinstance(stmt, ast.AnnAssign):
        if isinstance(stmt.target, ast.Name):
            yield stmt.target.id, stmt.value
    elif isinstance(stmt, ast.AugAssign):
        if isinstance(stmt.target, ast.Name):
            yield stmt.target.id, None
    elif isinstance(stmt, ast.For | ast.AsyncFor):
        yield from ((n.id, None) for n in walk(stmt.target) if isinstance(n, ast.Name))
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        for item in stmt.items:
            if item.optional_vars is not None:
                yield from ((n.id, None) for n in walk(item.optional_vars) if isinstance(n, ast.Name))
    elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield stmt.name, None
    elif isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            yield (alias.asname or alias.name.split(".")[0]), None
    elif isinstance(stmt, ast.Global | ast.Nonlocal):
        yield from ((name, None) for name in stmt.names)


def static_condition(
    test: ast.expr, env: Mapping[str, Value], imports: ImportMap, local_names: AbstractSet[str]
) -> tuple[bool, bool | None]:
    """(whether Warp folds ``test`` when it compiles, its truth value when the checker knows it)."""
    if isinstance(test, ast.Call) and imports.warp_name(test.func) == "static":
        argument = test.args[0] if len(test.args) == 1 and not test.keywords else None
        if argument is None or any(isinstance(n, ast.Name) and n.id in local_names for n in walk(argument)):
            # Warp also sees the function's constant locals (an unrolled loop's variable): not the module's
            return True, None
        value = fold_static(argument, env, imports)
        return True, None if value is None else bool(value)
    if isinstance(test, ast.Constant):
        return True, bool(test.value)
    if isinstance(test, ast.Name) and test.id not in local_names:
        value = env.get(test.id)
        return True, None if value is None else bool(value)
    return False, None


def compiled_view(
    node: ast.FunctionDef, env: Mapping[str, Value], imports: ImportMap, abstract: bool = False
) -> CompiledView | None:
    """What of ``node``'s body Warp leaves out (None: nothing), with ``env`` the values the function sees
    (`closure_values`)."""
    full = full_body_index(node)
    if abstract:
        body = frozenset(id(n) for n in node.body)
        return CompiledView(body, (), True, body)
    ifs = full.of(ast.If)
    conditionals = full.of(ast.IfExp)
    if not ifs and not conditionals:
        return None
    if not any(_may_fold(n.test, imports) for n in ifs) and not any(
        _may_fold(n.test, imports) for n in conditionals
    ):
        return None
    local_names = function_locals(node)
    hidden: set[int] = set()
    dropped_for_certain: set[int] = set()
    spans: list[tuple[int, int, int, int]] = []  # where the dropped parts are, to skip branches inside
    branches: list[StaticBranch] = []
    candidates: list[ast.If | ast.IfExp] = [*ifs, *conditionals]
    for branch_node in candidates:
        if any(_inside(branch_node, span) for span in spans):
            continue  # a branch in a dropped one needs no decision of its own
        folds, value = static_condition(branch_node.test, env, imports, local_names)
        if not folds:
            continue
        branches.append(StaticBranch(branch_node, value))
        dropped: list[ast.AST] = []
        if isinstance(branch_node, ast.If):
            if value is not True:
                dropped.extend(branch_node.body)
            if value is not False:
                dropped.extend(branch_node.orelse)
        else:
            if value is not True:
                dropped.append(branch_node.body)
            if value is not False:
                dropped.append(branch_node.orelse)
        for root in dropped:
            hidden.add(id(root))
            spans.append(_span(root))
            if value is not None:
                dropped_for_certain.add(id(root))
    if not branches:
        return None
    return CompiledView(frozenset(hidden), tuple(branches), False, frozenset(dropped_for_certain))


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    line = getattr(node, "lineno", 0)
    return (
        line,
        getattr(node, "col_offset", 0),
        getattr(node, "end_lineno", line) or line,
        getattr(node, "end_col_offset", 0) or 0,
    )


def _inside(node: ast.AST, span: tuple[int, int, int, int]) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    return (span[0], span[1]) <= start and start < (span[2], span[3])


def _may_fold(test: ast.expr, imports: ImportMap) -> bool:
    """Cheap first look: a condition Warp might fold (`static_condition` decides)."""
    return isinstance(test, ast.Constant | ast.Name) or (
        isinstance(test, ast.Call) and imports.warp_name(test.func) == "static"
    )
