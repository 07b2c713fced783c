"""Build a kernel from its source without running its module's top-level code (issue #37 item 1).

Whatever runs in a process can change what that process reports, and importing a module runs
all of its top-level code. A *hermetic* build takes from the module's text only what the kernel
needs: the kernel's ``def``, the ``@wp.func``s and ``@wp.struct``s it reaches, and the module
constants they read (literals, arithmetic of literals and other such constants,
``wp.constant(...)`` of those), and executes just those statements, in source order, in a fresh
namespace that holds ``warp``, ``numpy`` and ``math`` and nothing of the workspace.

A kernel that cannot be built that way is refused with the reason (``NotHermetic``): a kernel
made by a factory or inside a function, one that reaches a name bound by anything else than a
definition or a constant (a call, an import from the workspace, a closure over run-time state),
a decorator other than Warp's, a ``wp.static`` over something not a constant. Such a kernel is
validated the old way, by importing its module.

``build_module`` builds every kernel of a module so, and the contracts the module defines itself
with what they reach (``hermetic_contract``), for the worker (``steps/load.py``), when
``why_not`` (text only: no Warp, nothing executed; the supervisor runs it too, to report
WHD069 on the others) finds nothing against it (docs/reliability.md, "Hermetic verdicts").
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib
import linecache
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warp_harness.daemon import hermetic_contract
from warp_harness.daemon.hermetic_contract import NotHermetic as NotHermetic

# the modules a hermetic namespace holds, under the names a module may import them as (imported
# only when a kernel is built: the supervisor, which never imports Warp, runs ``why_not``)
_LIBRARIES = ("warp", "numpy", "math")
_DECORATORS = {"kernel", "func", "struct", "func_native"}


def module_name_for(path: Path) -> tuple[str, Path]:
    """(dotted module name, folder to put on sys.path) for a file, honouring packages."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


@dataclass(frozen=True)
class HermeticKernel:
    kernel: Any  # the warp.Kernel
    module_name: str  # the fresh namespace's name (its Warp module)
    statements: tuple[str, ...]  # the top-level names whose statements were executed, in order


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    return []


def _warp_attr(node: ast.expr, aliases: set[str]) -> str | None:
    """``wp.X`` (``wp`` an alias of warp) -> "X"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
        return node.attr
    return None


def _decorator_kind(dec: ast.expr, aliases: set[str]) -> str | None:
    target = dec.func if isinstance(dec, ast.Call) else dec
    kind = _warp_attr(target, aliases)
    if kind not in _DECORATORS:
        return None
    if isinstance(dec, ast.Call) and (
        dec.args or not all(isinstance(k.value, ast.Constant) for k in dec.keywords)
    ):
        return None  # only literal keyword arguments (enable_backward=False ...)
    return kind


def _is_constant_expr(node: ast.expr, aliases: set[str], constants: set[str]) -> bool:
    """Literals, names of constants, arithmetic of those, ``wp.constant(...)``, ``wp.<scalar>(...)``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float | bool)
    if isinstance(node, ast.Name):
        return node.id in constants
    if isinstance(node, ast.UnaryOp):
        return _is_constant_expr(node.operand, aliases, constants)
    if isinstance(node, ast.BinOp):
        return _is_constant_expr(node.left, aliases, constants) and _is_constant_expr(
            node.right, aliases, constants
        )
    if isinstance(node, ast.Call) and _warp_attr(node.func, aliases) is not None and not node.keywords:
        return all(_is_constant_expr(a, aliases, constants) for a in node.args)
    return False


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@dataclass
class _Plan:
    tree: ast.Module
    aliases: set[str]
    library_names: dict[str, str]  # alias -> library module name
    definitions: dict[str, ast.stmt]
    constants: set[str]
    rebound: set[str]


def _plan(source: str, filename: str) -> _Plan:
    tree = ast.parse(source, filename)
    aliases = {"wp"} | {
        a.asname or a.name
        for n in tree.body
        if isinstance(n, ast.Import)
        for a in n.names
        if a.name == "warp"
    }
    library_names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _LIBRARIES:
                    library_names[a.asname or a.name] = a.name
    definitions: dict[str, ast.stmt] = {}
    constants: set[str] = set()
    rebound: set[str] = set()
    for node in tree.body:
        names = _bound_names(node)
        for name in names:
            if name in definitions or name in constants:
                rebound.add(name)
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            kinds = [_decorator_kind(d, aliases) for d in node.decorator_list]
            if len(kinds) == 1 and kinds[0] is not None:
                definitions[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign) and len(names) == 1:
            value = node.value
            if value is not None and _is_constant_expr(value, aliases, constants):
                definitions[names[0]] = node
                constants.add(names[0])
    return _Plan(tree, aliases, library_names, definitions, constants, rebound)


def _reached(plan: _Plan, kernel_name: str) -> set[str]:
    """The top-level names the kernel ``kernel_name`` needs (itself included)."""
    definitions = plan.definitions
    if kernel_name not in definitions or not isinstance(definitions[kernel_name], ast.FunctionDef):
        raise NotHermetic(
            f"`{kernel_name}` is not a module-level `@wp.kernel` def of this file (a factory, a closure "
            "or another decorator makes it at run time)"
        )
    kernel_def = definitions[kernel_name]
    assert isinstance(kernel_def, ast.FunctionDef)
    if _decorator_kind(kernel_def.decorator_list[0], plan.aliases) != "kernel":
        raise NotHermetic(f"`{kernel_name}` is not decorated with `@wp.kernel`")
    return _reach(plan, [kernel_name])


def _reach(plan: _Plan, roots: list[str]) -> set[str]:
    """The top-level definitions and constants ``roots`` need (themselves included)."""
    definitions = plan.definitions
    needed: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        if name in plan.rebound:
            raise NotHermetic(f"`{name}` is bound more than once at the top of the module")
        needed.add(name)
        node = definitions[name]
        for used in sorted(_loads(node)):
            if used in definitions:
                todo.append(used)
            elif used in plan.library_names or used in plan.aliases or hasattr(builtins, used):
                continue
            elif _is_local(node, used):
                continue
            else:
                raise NotHermetic(
                    f"`{name}` reads `{used}`, which the module binds at run time (not a definition or a "
                    "constant of its own text)"
                )
    return needed


def _execute(
    plan: _Plan, source: str, filename: str, needed: set[str], module_name: str, own: Any = None
) -> types.ModuleType:
    picked = {i for i, n in enumerate(plan.tree.body) if any(b in needed for b in _bound_names(n))}
    if own is not None:
        picked |= own.statements
    first = list(own.future) if own is not None else []
    body = [plan.tree.body[i] for i in first] + [
        n for i, n in enumerate(plan.tree.body) if i in picked and i not in first
    ]
    namespace = types.ModuleType(module_name)
    namespace.__file__ = filename
    namespace.__dict__.update({k: importlib.import_module(v) for k, v in plan.library_names.items()})
    for alias in plan.aliases:
        namespace.__dict__[alias] = importlib.import_module("warp")
    # Warp reads a kernel's source through inspect (linecache): the text parsed here, not the
    # file as it may be now
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[module_name] = namespace  # Warp's module registry keys on the Python module
    try:
        if own is not None:
            for local, (module, attr) in own.imports.items():
                namespace.__dict__[local] = _library_value(module, attr)
        exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), namespace.__dict__)
    except Exception as exc:
        del sys.modules[module_name]
        raise NotHermetic(f"building from the source failed: {type(exc).__name__}: {exc}") from exc
    return namespace


def _library_value(module: str, attr: str | None) -> Any:
    """``module`` (or its ``attr``), imported from the interpreter's own folders only: a file of
    the workspace named like a standard module (``fractions.py`` next to the kernel) is not it."""
    loaded = _library_module(module)
    if attr is None:
        return loaded
    if hasattr(loaded, attr):
        return getattr(loaded, attr)
    return _library_module(f"{module}.{attr}")


def _library_module(name: str) -> types.ModuleType:
    found = sys.modules.get(name)
    if found is not None:
        return found
    roots = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    saved = list(sys.path)
    sys.path[:] = [
        p
        for p in saved
        if p and (os.path.realpath(p).startswith(roots) or "site-packages" in p or "dist-packages" in p)
    ]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def build(source: str, filename: str, kernel_name: str) -> HermeticKernel:
    """The kernel ``kernel_name`` of the module text ``source`` (its file ``filename``), built
    in a fresh namespace from the statements it reaches; ``NotHermetic`` when it cannot be."""
    plan = _plan(source, filename)
    needed = _reached(plan, kernel_name)
    body = [n for n in plan.tree.body if any(b in needed for b in _bound_names(n))]
    digest = hashlib.sha256(ast.dump(ast.Module(body=body, type_ignores=[])).encode()).hexdigest()[:16]
    module_name = f"_wh_hermetic_{kernel_name}_{digest}"
    try:
        namespace = _execute(plan, source, filename, needed, module_name)
    except NotHermetic as exc:
        raise NotHermetic(f"`{kernel_name}`: {exc}") from exc
    kernel = namespace.__dict__.get(kernel_name)
    if not isinstance(kernel, importlib.import_module("warp").Kernel):
        raise NotHermetic(f"`{kernel_name}` did not build into a Warp kernel")
    order = tuple(b for n in body for b in _bound_names(n) if b in needed)
    return HermeticKernel(kernel=kernel, module_name=module_name, statements=order)


def build_module(source: str, filename: str, module_name: str) -> types.ModuleType:
    """A module named ``module_name`` holding every kernel of the module text ``source``, the
    ``@wp.func``s and ``@wp.struct``s they reach and the module's constants, and the module's own
    contracts with what they reach (``hermetic_contract``), built without running anything else
    of it (what a sibling contract module imports in its place); ``NotHermetic`` when a kernel
    or a contract of the text cannot be built so (a kernel made inside a function or by a call,
    one reading a name bound at run time, a contract reaching code that runs at import)."""
    plan, needed, own = _analysed(source, filename)
    return _execute(plan, source, filename, needed, module_name, own)


# the last texts analysed (``why_not`` and ``build_module`` of one job read the same text: the
# worker decides, then builds); nothing here is changed by a build (``compile`` leaves the tree)
_ANALYSED: dict[tuple[str, str], tuple[_Plan, set[str], Any]] = {}


def _analysed(source: str, filename: str) -> tuple[_Plan, set[str], Any]:
    """(plan, the top-level names the build executes, the module's own contracts' plan or None);
    ``NotHermetic`` (not cached) when the module cannot be built from its text."""
    key = (filename, hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
    found = _ANALYSED.get(key)
    if found is not None:
        return found[0], set(found[1]), found[2]
    plan = _plan(source, filename)
    needed = _module_needs(plan)
    own = _own_contracts(plan)
    if own is not None:
        needed |= _reach(plan, sorted(own.kernel_names))
    if len(_ANALYSED) >= 4:
        _ANALYSED.clear()
    _ANALYSED[key] = (plan, set(needed), own)
    return plan, needed, own


def _own_contracts(plan: _Plan) -> Any:
    """The module's own contract statements and what they reach (``hermetic_contract.ContractPlan``),
    None when it defines none at its top level."""
    kernel_defs = set(plan.definitions) - plan.rebound
    return hermetic_contract.plan_contracts(plan.tree, kernel_defs, plan.rebound)


def _module_kernels(plan: _Plan) -> list[str]:
    return [
        n.name
        for n in plan.tree.body
        if isinstance(n, ast.FunctionDef)
        and any(_decorator_kind(d, plan.aliases) == "kernel" for d in n.decorator_list)
    ]


def _module_needs(plan: _Plan) -> set[str]:
    """The top-level names a hermetic build of the whole module executes; ``NotHermetic`` when
    a kernel of the module cannot be built from its text."""
    for node in ast.walk(plan.tree):
        if isinstance(node, ast.FunctionDef) and node not in plan.tree.body:
            if any(_decorator_kind(d, plan.aliases) == "kernel" for d in node.decorator_list):
                raise NotHermetic(f"kernel `{node.name}` is made inside a function, at run time (a factory)")
        if isinstance(node, ast.Call) and _warp_attr(node.func, plan.aliases) in ("kernel", "Kernel"):
            raise NotHermetic("a kernel is made by a call to `wp.kernel` at run time")
    kernels = _module_kernels(plan)
    if not kernels:
        raise NotHermetic("the module's text defines no module-level `@wp.kernel`")
    needed = set(plan.constants - plan.rebound)
    for name in kernels:
        needed |= _reached(plan, name)
    return needed


def why_not(source: str, filename: str, module_name: str, contracts: list[tuple[str, str]]) -> str | None:
    """Why the module text ``source`` cannot be checked hermetically (None: it can), from text
    alone: no Warp, nothing executed. ``contracts``: (file name, text) of its sibling contract
    modules. The supervisor and the worker both decide with this, on the same text: the worker
    builds the module (``build_module``) exactly when it returns None, and the supervisor, which
    runs no workspace code, reports every other verdict as not hermetic (WHD069)."""
    try:
        plan, needed, own = _analysed(source, filename)
        _no_module_settings(plan)
    except NotHermetic as exc:
        return str(exc)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"its text does not parse ({type(exc).__name__})"
    if not contracts and own is None:
        return (
            "its contracts are not in a sibling `<module>_contract.py`, nor top-level `Contract(...)` or "
            "`@define` statements of its text: they are made when its top-level code runs"
        )
    short = module_name.rsplit(".", 1)[-1]
    for sibling, text in contracts:
        try:
            tree = ast.parse(text, sibling)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"its contract module `{sibling}` does not parse ({type(exc).__name__})"
        plain = {
            a.asname or a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import)
            for a in n.names
            if a.name == module_name
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in plain
                and node.attr not in needed
            ):
                return (
                    f"its contract module `{sibling}` reads `{node.attr}` of the module, which is not a "
                    "kernel, `@wp.func`, `@wp.struct` or constant a hermetic build makes"
                )
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.module not in (module_name, short) and not (node.level and node.module == short):
                continue
            for alias in node.names:
                if alias.name not in needed:
                    return (
                        f"its contract module `{sibling}` imports `{alias.name}`, which is not a kernel, "
                        "`@wp.func`, `@wp.struct` or constant a hermetic build makes"
                    )
    return None


def _no_module_settings(plan: _Plan) -> None:
    """A top-level ``wp.set_module_options(...)`` or ``wp.config.X = ...`` changes how the kernels
    build: a hermetic build runs no top-level call, so such a module is imported instead."""
    for node in plan.tree.body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and _warp_attr(sub.func, plan.aliases) == "set_module_options":
                raise NotHermetic(
                    "its top level calls `wp.set_module_options`, which a hermetic build does not run"
                )
            if (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Store)
                and _warp_attr(sub.value, plan.aliases) == "config"
            ):
                raise NotHermetic(
                    f"its top level sets `wp.config.{sub.attr}`, which a hermetic build does not run"
                )


def _is_local(node: ast.stmt, name: str) -> bool:
    """Whether ``name`` is a parameter, or bound inside ``node`` (a loop variable, a local)."""
    if isinstance(node, ast.FunctionDef):
        params = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
        if name in params:
            return True
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id == name:
            return True
    return False
