"""A kernel made inside a function (a factory), read as a module-level kernel (issue #31).

``def make(n, op): @wp.kernel def k(...): ... n ... op(...) ...; return k`` makes its kernel only
when it runs, closing over its arguments, so the module's text alone does not say what ``k`` is.
The capture records, per kernel object, its ``__qualname__`` and the value of each closure cell
(``warp_harness.capture.recorder.closure_record``): a literal (``int``, ``float``, ``bool``), a Warp
type (``wp.float32``, ``wp.vec3``) or a Python scalar type (``float``), or a ``@wp.func``/``@wp.struct``
defined at the top of a module of the workspace (by file and qualname); anything else is ``other``.

``hoisted`` takes a module's syntax tree and such a record and returns a tree whose top level
ends with each free name of the kernel bound to its recorded value (``n = 3``, ``T = wp.float32``,
``op = helper``) and the kernel's ``def`` itself: the kernel as if written at the module's top
level, which ``hermetic_build`` then plans and builds as any other (the funcs it reaches followed
from the text, its imports from the workspace's texts). Nothing of the factory's body runs.

Refused (``NotHermetic``, the replay imports the module, WHD069): a qualname that names no single
nested ``@wp.kernel`` def of the text, a free name the factory binds otherwise than as a parameter
(a local it computes, rebinds, a ``nonlocal``), a free name the record does not hold or holds as
``other`` (a lambda, an object, a func made inside a function), a func or struct of another file.
Text only: no Warp, nothing executed.
"""

from __future__ import annotations

import ast
import copy
import math
from typing import Any

from warp_harness.daemon.hermetic_contract import NotHermetic

_LITERALS = ("int", "float", "bool")


def _functions(body: list[ast.stmt]) -> list[ast.FunctionDef]:
    """The ``def``s of a body at any depth of its statements (``if``/``for``/``with``/``try``
    blocks), not those inside another function or class."""
    out: list[ast.FunctionDef] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.FunctionDef):
            out.append(node)
        elif isinstance(node, ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        else:
            todo.extend(ast.iter_child_nodes(node))
    return out


def _bound_in(func: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """(parameters of ``func``, names its body binds otherwise: assignments, loop targets,
    imports, nested defs and classes; a ``nonlocal`` anywhere inside is refused)."""
    a = func.args
    params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    stored: set[str] = set()
    todo: list[ast.AST] = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Nonlocal | ast.Global):
            raise NotHermetic(f"`{func.name}` declares `{node.__class__.__name__.lower()}` names")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stored.add(node.name)
            for sub in ast.walk(node):  # its own scope, but a nonlocal there rebinds ours
                if isinstance(sub, ast.Nonlocal):
                    raise NotHermetic(f"a function inside `{func.name}` declares `nonlocal` names")
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            stored.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            stored |= {(x.asname or x.name).split(".")[0] for x in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            stored.add(node.name)
        todo.extend(ast.iter_child_nodes(node))
    return params, stored


def _kernel_def(tree: ast.Module, qualname: str) -> tuple[ast.FunctionDef, list[ast.FunctionDef]]:
    """(the nested def ``qualname`` names, its enclosing functions outermost first)."""
    parts = qualname.split(".<locals>.")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise NotHermetic(f"`{qualname}` is not a function's nested kernel (a class or lambda holds it)")
    body: list[ast.stmt] = tree.body
    chain: list[ast.FunctionDef] = []
    for part in parts:
        found = [f for f in _functions(body) if f.name == part]
        if len(found) != 1:
            where = chain[-1].name if chain else "the module"
            return_why = "no" if not found else f"{len(found)}"
            raise NotHermetic(f"{return_why} `def {part}` in {where} (the factory of `{qualname}`)")
        chain.append(found[0])
        body = found[0].body
    return chain[-1], chain[:-1]


def _free_names(kernel: ast.FunctionDef) -> set[str]:
    a = kernel.args
    local = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    loads: set[str] = set()
    for sub in ast.walk(kernel):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else local).add(sub.id)
        elif isinstance(sub, ast.arg):
            local.add(sub.arg)
    return loads - local


def _dotted(name: str, file: str) -> str:
    """The module ``file`` (a path relative to the workspace) as a dotted name."""
    parts = file.removesuffix(".py").split("/")
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not file.endswith(".py") or not parts or not all(p.isidentifier() for p in parts):
        raise NotHermetic(f"the closure cell `{name}` is defined in `{file}`, not an importable module")
    return ".".join(parts)


def _binding(name: str, cell: Any, aliases: set[str], home: str, node: ast.AST) -> tuple[ast.stmt, str]:
    """(the statement binding the free name ``name`` to its recorded ``cell``; what it binds:
    ``constant`` (a literal), ``definition`` (a Warp type, a definition of the module), ``import``
    (a definition of another workspace module, followed into its text))."""
    if not isinstance(cell, dict):
        raise NotHermetic(f"the closure cell `{name}` was not recorded")
    kind = cell.get("kind")
    value: ast.expr
    if kind in _LITERALS:
        literal: Any = cell.get("value")
        ok = {"int": int, "float": float, "bool": bool}[str(kind)]
        if type(literal) is not ok and not (kind == "float" and type(literal) is int):
            raise NotHermetic(f"the closure cell `{name}` holds no {kind}")
        if isinstance(literal, float) and not math.isfinite(literal):
            raise NotHermetic(f"the closure cell `{name}` is not a finite float")
        value, what = ast.Constant(ok(literal)), "constant"
    elif kind == "warp":
        attr = str(cell.get("name") or "")
        if not attr.isidentifier() or not aliases:
            raise NotHermetic(f"the closure cell `{name}` names no Warp type")
        value, what = ast.Attribute(ast.Name(sorted(aliases)[0], ast.Load()), attr, ast.Load()), "definition"
    elif kind == "builtin":
        if cell.get("name") not in _LITERALS:
            raise NotHermetic(f"the closure cell `{name}` names no scalar type")
        value, what = ast.Name(str(cell["name"]), ast.Load()), "definition"
    elif kind in ("func", "struct"):
        qualname = str(cell.get("qualname") or "")
        if not qualname.isidentifier():
            raise NotHermetic(f"the closure cell `{name}` is a {kind} made inside a function (`{qualname}`)")
        if cell.get("file") != home:
            # another workspace file: imported by its dotted path from the workspace root, which
            # the build follows into that file's text (``hermetic_imports``), never importing it
            module = _dotted(name, str(cell.get("file") or ""))
            return ast.copy_location(ast.ImportFrom(module, [ast.alias(qualname, name)], 0), node), "import"
        value, what = ast.Name(qualname, ast.Load()), "definition"
    else:
        shown = cell.get("type") if kind == "other" else kind
        raise NotHermetic(
            f"the closure cell `{name}` holds a value of type `{shown}`, which a build cannot take from "
            "the text (a lambda, an object, a func made inside a function)"
        )
    target = ast.Name(name, ast.Store())
    return ast.copy_location(ast.Assign([target], ast.copy_location(value, node)), node), what


def hoisted(
    tree: ast.Module, kernel_name: str, closure: dict[str, Any], aliases: set[str]
) -> tuple[ast.Module, dict[str, str]]:
    """(a copy of ``tree`` with the bindings of the kernel's free names and its ``def`` appended
    at its top level; the names bound, each with what it binds, ``_binding``)."""
    qualname = str(closure.get("qualname") or "")
    if qualname.rsplit(".", 1)[-1] != kernel_name:
        raise NotHermetic(f"the recorded closure is of `{qualname}`, not `{kernel_name}`")
    cells = closure.get("cells") if isinstance(closure.get("cells"), dict) else {}
    assert isinstance(cells, dict)
    tree = copy.deepcopy(tree)
    kernel, factories = _kernel_def(tree, qualname)
    bound: dict[str, tuple[set[str], set[str]]] = {f.name: _bound_in(f) for f in factories}
    bindings: list[ast.stmt] = []
    names: dict[str, str] = {}
    for free in sorted(_free_names(kernel)):
        owner = next((f for f in reversed(factories) if free in bound[f.name][0] | bound[f.name][1]), None)
        if owner is None:
            continue  # a global of the module: the plan reads it as for any module-level kernel
        params, stored = bound[owner.name]
        if free not in params or free in stored:
            raise NotHermetic(
                f"`{kernel_name}` reads `{free}`, which its factory `{owner.name}` computes or rebinds "
                "(only a factory's parameters are bound from the capture)"
            )
        statement, what = _binding(free, cells.get(free), aliases, str(closure.get("path")), kernel)
        bindings.append(statement)
        names[free] = what
    tree.body.extend([*bindings, kernel])
    ast.fix_missing_locations(tree)
    return tree, names
