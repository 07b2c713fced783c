"""Calls of a file's own ``@wp.func`` from kernels and functions: which definition a bare-name call
certainly refers to, and how its arguments bind to the definition's parameters (Python's rules, which
Warp applies before it compares types: ``func.signature.bind`` in ``codegen.func_match_args``).

Conservative: a name defined more than once (overloads, or variants made by different factories),
rebound at module level, nested in a class, or out of the caller's lexical reach has no definition here.
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field

from warp_harness.model.index import full_body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.module import ModuleModel

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(eq=False, repr=False)
class _FileScopes:
    """Per file: each function's or class's enclosing scope, and the names the module rebinds."""

    parents: dict[int, ast.AST] = field(default_factory=dict)
    # names bound at module level by anything but one `def` (an assignment, an import, a second def)
    module_rebound: frozenset[str] = frozenset()
    # `_binds` answers, per (scope, name, the def not counted)
    binds: dict[tuple[int, str, int], bool] = field(default_factory=dict)


_FILES: weakref.WeakKeyDictionary[ast.Module, _FileScopes] = weakref.WeakKeyDictionary()
# the module itself in `_FileScopes.parents`: `_FILES` holds its values strongly, so a value holding its
# key (the tree) would keep both alive for ever (every file's syntax tree stayed in memory)
_TOP = ast.Module(body=[], type_ignores=[])


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")
_BLOCK_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _blocks(stmt: ast.AST) -> list[ast.AST]:
    """The statements directly inside ``stmt``'s blocks (functions and classes only define in statements:
    no need to walk expressions, which are most of a large file)."""
    fields = _BLOCK_FIELDS.get(type(stmt))
    if fields is None:
        fields = _BLOCK_FIELDS[type(stmt)] = tuple(f for f in _BLOCKS if f in type(stmt)._fields)
    inner: list[ast.AST] = []
    for name in fields:
        inner.extend(getattr(stmt, name))
    return inner


def _stored(stmt: ast.AST) -> list[str]:
    """Names a statement binds by itself (not in its nested blocks)."""
    targets: list[ast.AST] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AugAssign | ast.AnnAssign | ast.For | ast.AsyncFor):
        targets = [stmt.target]
    elif isinstance(stmt, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    elif isinstance(stmt, ast.Delete):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.Import | ast.ImportFrom):
        return [(alias.asname or alias.name).split(".")[0] for alias in stmt.names]
    elif isinstance(stmt, ast.ExceptHandler) and stmt.name:
        return [stmt.name]
    elif isinstance(stmt, _SCOPES):
        return [stmt.name]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _file_scopes(tree: ast.Module) -> _FileScopes:
    found = _FILES.get(tree)
    if found is not None:
        return found
    parents: dict[int, ast.AST] = {}
    stack: list[tuple[ast.AST, ast.AST]] = [(child, _TOP) for child in tree.body]
    while stack:
        node, scope = stack.pop()
        inner = scope
        if isinstance(node, _SCOPES):
            parents[id(node)] = scope
            inner = node
        stack.extend((child, inner) for child in _blocks(node))
    defs: dict[str, int] = {}
    rebound: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, _SCOPES):
            defs[stmt.name] = defs.get(stmt.name, 0) + 1
            continue
        # assignments, imports, and whatever `if` / `try` / `for` / `with` blocks at module level bind
        nested: list[ast.AST] = [stmt]
        while nested:
            node = nested.pop()
            rebound.update(_stored(node))
            if not isinstance(node, _SCOPES):
                nested.extend(_blocks(node))
    rebound.update(name for name, count in defs.items() if count > 1)
    found = _FileScopes(parents, frozenset(rebound))
    _FILES[tree] = found
    return found


def carry_scopes(old_tree: ast.Module, tree: ast.Module, old_node: ast.AST, node: ast.AST) -> None:
    """What this module derived from ``old_tree`` (each function's and class's enclosing scope, the
    names the module rebinds), for ``tree``: the same module with the top-level function ``old_node``
    replaced by ``node`` of the same name, holding no other function or class (a unit). Derived afresh it
    would walk every statement of the file (a third of a second for 8,000 kernels)."""
    scopes = _FILES.get(old_tree)
    top = _TOP  # the module scope in `parents`
    if scopes is None or scopes.parents.get(id(old_node)) is not top:
        return
    parents = dict(scopes.parents)
    del parents[id(old_node)]
    parents[id(node)] = top
    # the `_binds` answers (per scope and name, cheap) are asked again as needed
    _FILES[tree] = _FileScopes(parents, scopes.module_rebound)


def _binds_cached(scopes: _FileScopes, scope: ast.AST, name: str, besides: ast.AST | None) -> bool:
    key = (id(scope), name, id(besides))
    found = scopes.binds.get(key)
    if found is None:
        found = scopes.binds[key] = _binds(scope, name, besides)
    return found


def _binds(scope: ast.AST, name: str, besides: ast.AST | None) -> bool:
    """Whether the function ``scope`` binds ``name`` itself or in a function nested in it (a parameter, an
    assignment, an import, a ``def`` other than ``besides``): conservative, from the body's shared index."""
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = scope.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    if any(a is not None and a.arg == name for a in every):
        return True
    index = full_body_index(scope)
    if any(n.id == name and isinstance(n.ctx, ast.Store | ast.Del) for n in index.of(ast.Name)):
        return True
    if any(a.arg == name for a in index.of(ast.arg)):
        return True
    defs: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = [
        *index.of(ast.FunctionDef),
        *index.of(ast.AsyncFunctionDef),
        *index.of(ast.ClassDef),
    ]
    if any(d.name == name and d is not besides for d in defs):
        return True
    declared: list[ast.Global | ast.Nonlocal] = [*index.of(ast.Global), *index.of(ast.Nonlocal)]
    if any(name in g.names for g in declared):
        return True
    imports: list[ast.Import | ast.ImportFrom] = [*index.of(ast.Import), *index.of(ast.ImportFrom)]
    if any((a.asname or a.name).split(".")[0] == name for i in imports for a in i.names):
        return True
    return any(h.name == name for h in index.of(ast.ExceptHandler))


def called_func(model: ModuleModel, caller: KernelDef, call: ast.Call) -> KernelDef | None:
    """The single ``@wp.func`` of this file that the bare-name call ``call`` inside ``caller`` runs, or None
    when that is not certain."""
    if not isinstance(call.func, ast.Name):
        return None
    name = call.func.id
    func = model.funcs.get(name)
    if func is None or name in model.overloaded_funcs:
        return None
    scopes = _file_scopes(model.tree)
    home = scopes.parents.get(id(func.node))
    if home is None or isinstance(home, ast.ClassDef):
        return None  # a method: a bare name does not reach it
    if isinstance(home, ast.Module) and name in scopes.module_rebound:
        return None
    # every scope around the call, innermost first, up to the one that defines the function
    scope: ast.AST | None = caller.node
    reached = False
    while scope is not None:
        real = model.tree if scope is _TOP else scope
        if scope is home:
            reached = True
            if _binds_cached(scopes, real, name, func.node):
                return None
            break
        if isinstance(scope, ast.ClassDef):
            pass  # a class body is not an enclosing scope of the functions in it
        elif _binds_cached(scopes, real, name, None):
            return None
        scope = scopes.parents.get(id(scope))
    return func if reached else None


def warp_key(model: ModuleModel, func: KernelDef) -> str:
    """The name Warp gives ``func`` in its messages: its qualified name, ``.<locals>.`` written
    ``__locals__`` (``make__locals__damp`` for a ``damp`` defined in ``make``)."""
    scopes = _file_scopes(model.tree)
    parts = [func.name]
    scope = scopes.parents.get(id(func.node))
    while scope is not None and not isinstance(scope, ast.Module):
        name = getattr(scope, "name", "")
        is_function = isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef)
        parts.append(f"{name}__locals__" if is_function else f"{name}.")
        scope = scopes.parents.get(id(scope))
    return "".join(reversed(parts))


@dataclass(frozen=True)
class Binding:
    """How a call's arguments bind to a function's parameters: parameter name -> the argument's node,
    or ``error`` (Python's own message) when they do not bind at all."""

    arguments: dict[str, ast.expr]
    error: str | None = None


def bind_arguments(func: KernelDef, call: ast.Call) -> Binding | None:
    """The binding of ``call``'s arguments to ``func``'s parameters (None when the call unpacks ``*`` /
    ``**`` or the function takes ``*args`` / ``**kwargs``: not decidable here)."""
    args = func.node.args
    if args.vararg is not None or args.kwarg is not None:
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return None
    positional = [*args.posonlyargs, *args.args]
    only_positional = {a.arg for a in args.posonlyargs}
    keyword = [*args.args, *args.kwonlyargs]
    defaults = {a.arg for a in positional[len(positional) - len(args.defaults) :]} if args.defaults else set()
    defaults |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None}
    bound: dict[str, ast.expr] = {}
    name = func.name
    if len(call.args) > len(positional):
        return Binding(
            {}, f"{name}() takes {len(positional)} positional arguments but {len(call.args)} were given"
        )
    for param, value in zip(positional, call.args, strict=False):
        bound[param.arg] = value
    names = {a.arg for a in keyword}
    for kw in call.keywords:
        assert kw.arg is not None
        if kw.arg in only_positional or kw.arg not in names:
            return Binding({}, f"{name}() got an unexpected keyword argument '{kw.arg}'")
        if kw.arg in bound:
            return Binding({}, f"{name}() got multiple values for argument '{kw.arg}'")
        bound[kw.arg] = kw.value
    missing = [a.arg for a in [*positional, *args.kwonlyargs] if a.arg not in bound and a.arg not in defaults]
    if missing:
        listed = ", ".join(f"'{m}'" for m in missing)
        plural = "s" if len(missing) > 1 else ""
        return Binding({}, f"{name}() missing {len(missing)} required argument{plural}: {listed}")
    return Binding(bound)


__all__ = ["Binding", "bind_arguments", "called_func", "warp_key"]
