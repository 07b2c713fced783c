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
import builtins
import copy
import math
from collections.abc import Callable
from typing import Any

from warp_harness.capture import factory_reads
from warp_harness.capture.identity import definition_of, factory_digest
from warp_harness.daemon import definition_time
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


def _kernel_def(
    tree: ast.Module, qualname: str, definition: tuple[int, int] | None = None
) -> tuple[ast.FunctionDef, list[ast.FunctionDef]]:
    """(the nested def ``qualname`` names, its enclosing functions outermost first). ``definition``
    (``identity.definition_of``): the kernel is the ``i``-th of the ``n`` defs of its name in its
    factory, as the capture recorded (warp-lang's ``create_kernel_cond``: one in each branch of an
    ``if``)."""
    parts = qualname.split(".<locals>.")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise NotHermetic(f"`{qualname}` is not a function's nested kernel (a class or lambda holds it)")
    body: list[ast.stmt] = tree.body
    chain: list[ast.FunctionDef] = []
    for depth, part in enumerate(parts):
        found = [f for f in _functions(body) if f.name == part]
        where = chain[-1].name if chain else "the module"
        if definition is not None and depth == len(parts) - 1 and len(found) > 1:
            if len(found) != definition[1]:
                raise NotHermetic(
                    f"{len(found)} `def {part}` in {where}, {definition[1]} when captured: which one the "
                    "launch ran is not known (capture again)"
                )
            found = [found[definition[0]]]
        if len(found) != 1:
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
    elif kind in ("vector", "matrix"):
        value, what = _made_type(name, cell, aliases), "definition"
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


# the digest of what a factory's code reads from modules, of a text and a qualname
# (``factory_reads.reads_digest`` over the build's sources); ``NotHermetic`` when it cannot be made
ReadsDigest = Callable[[ast.Module, str, tuple[int, int] | None], str]


# Warp's scalar types, by their names under ``warp`` (a recorded vector or matrix type's dtype)
_SCALARS = (
    *("float16", "float32", "float64", "int8", "int16", "int32", "int64"),
    *("uint8", "uint16", "uint32", "uint64", "bool"),
)


def _made_type(name: str, cell: dict[str, Any], aliases: set[str]) -> ast.expr:
    """``wp.types.vector(length=3, dtype=wp.float32)`` (``wp.types.matrix(shape=(2, 2), ...)``) of a
    cell recorded as a vector (matrix) type the factory made: ints and a Warp scalar's name only."""
    dtype = cell.get("dtype")
    sizes = [cell.get("length")] if cell.get("kind") == "vector" else cell.get("shape")
    if not (
        aliases
        and dtype in _SCALARS
        and isinstance(sizes, list)
        and len(sizes) == (1 if cell.get("kind") == "vector" else 2)
        and all(type(d) is int and 0 < d <= 4096 for d in sizes)
    ):
        raise NotHermetic(f"the closure cell `{name}` is no vector or matrix type of ints and a Warp scalar")
    wp = ast.Name(sorted(aliases)[0], ast.Load())
    size: ast.keyword
    if cell.get("kind") == "vector":
        size = ast.keyword("length", ast.Constant(sizes[0]))
    else:
        size = ast.keyword("shape", ast.Tuple([ast.Constant(d) for d in sizes], ast.Load()))
    constructor = ast.Attribute(ast.Attribute(wp, "types", ast.Load()), str(cell["kind"]), ast.Load())
    dtype_node = ast.Attribute(ast.Name(sorted(aliases)[0], ast.Load()), dtype, ast.Load())
    return ast.Call(constructor, [], [size, ast.keyword("dtype", dtype_node)])


def hoisted(
    tree: ast.Module,
    kernel_name: str,
    closure: dict[str, Any],
    aliases: set[str],
    reads: ReadsDigest | None = None,
) -> tuple[ast.Module, dict[str, str]]:
    """(a copy of ``tree`` with the bindings of the kernel's free names and its ``def`` appended
    at its top level; the names bound, each with what it binds, ``_binding``). ``reads``: the
    digest of what the factory's code reads from modules, for the values it computes
    (``_computation``); without it, only a factory reading nothing of its module is trusted."""
    qualname = str(closure.get("qualname") or "")
    if qualname.rsplit(".", 1)[-1] != kernel_name:
        raise NotHermetic(f"the recorded closure is of `{qualname}`, not `{kernel_name}`")
    cells = closure.get("cells") if isinstance(closure.get("cells"), dict) else {}
    assert isinstance(cells, dict)
    tree = copy.deepcopy(tree)
    kernel, factories = _kernel_def(tree, qualname, definition_of(closure))
    bound: dict[str, tuple[set[str], set[str]]] = {f.name: _bound_in(f) for f in factories}
    trusted: list[str | None] = []  # why the factory's computed values are not trusted, once known

    def computation(what: str) -> None:
        if not trusted:
            trusted.append(_computation(tree, qualname, closure, reads))
        if trusted[0] is not None:
            raise NotHermetic(f"{what}: {trusted[0]}")

    _recorded_keywords(tree, kernel, factories, closure, aliases, bound, computation)
    bindings: dict[str, tuple[ast.stmt, Any]] = {}
    names: dict[str, str] = {}
    helpers: list[ast.FunctionDef] = []
    path = str(closure.get("path"))
    # the module's own top-level names: a func hoisted under one of them would be taken by Warp for
    # a redefinition of it (an overload or a replacement), never what the factory made
    taken = {
        name
        for statement in tree.body
        for name in (
            [statement.name]
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else [
                n.id
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
            ]
            + [
                (a.asname or a.name).split(".")[0]
                for n in ast.walk(statement)
                if isinstance(n, ast.Import | ast.ImportFrom)
                for a in n.names
            ]
        )
    }

    def bind(node: ast.FunctionDef, cells: dict[str, Any], depth: int) -> None:
        for free in sorted(_free_names(node)):
            owner = next(
                (f for f in reversed(factories) if free in bound[f.name][0] | bound[f.name][1]), None
            )
            if owner is None:
                continue  # a global of the module: the plan reads it as for any module-level kernel
            params, stored = bound[owner.name]
            cell = cells.get(free)
            made_here = any(f.name == free for f in _functions(owner.body))
            if free in stored and free not in params and made_here and depth == 0:
                helper = _helper_made_here(owner, free, cell, factories, aliases)
                if free in taken:
                    raise NotHermetic(
                        f"`{free}`, a `@wp.func` of the factory `{owner.name}`, is also a name of the "
                        "module: built beside the kernel it would be taken for a redefinition of the module's"
                    )
                if free not in names:
                    names[free] = "definition"
                    helpers.append(helper)
                    assert isinstance(cell, dict)  # _helper_made_here checked it
                    bind(helper, dict(cell["cells"]), depth + 1)
                continue
            if free not in params or free in stored:
                # a value the factory computes: the recorded one, while its code and what it reads
                # of the modules are the texts the capture ran (``_computation``)
                said = f"`{node.name}` reads `{free}`, which its factory `{owner.name}` computes"
                late = _rebound_late(owner, free, kernel.lineno)
                if late is not None:
                    raise NotHermetic(
                        f"{said} and {late}: its value at a later launch may not be the recorded one"
                    )
                computation(said)
            if free in bindings:
                if bindings[free][1] != cell:  # one call of the factory: one value of each parameter
                    raise NotHermetic(
                        f"the capture recorded two values of `{free}` for one call of `{owner.name}`"
                    )
                continue
            statement, what = _binding(free, cell, aliases, path, node)
            bindings[free] = (statement, cell)
            names[free] = what

    bind(kernel, cells, 0)
    tree.body.extend([*(b[0] for b in bindings.values()), *helpers, kernel])
    ast.fix_missing_locations(tree)
    return tree, names


def _rebound_late(factory: ast.FunctionDef, name: str, kernel_line: int) -> str | None:
    """Where the factory binds ``name`` after the kernel's ``def`` (line ``kernel_line``) or in a
    loop (warp-lang's ``test_module_mark_modified``: ``C = 17``, a launch, ``C = 42``, a launch of the
    same kernel): the cell then holds another value at a later launch than the one the capture
    recorded at the kernel's first. None when every binding comes before the kernel is made, outside
    loops (mujoco-warp's ``IS_ELLIPTIC = ...``, an ``if``/``else`` choosing a func): the value is final."""
    todo: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in factory.body]
    while todo:
        node, looped = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            binds = not isinstance(node, ast.Lambda) and node.name == name
        else:
            binds = (
                isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
            ) or (isinstance(node, ast.alias) and (node.asname or node.name).split(".")[0] == name)
        if binds:
            line = getattr(node, "lineno", kernel_line)
            if looped:
                return f"binds in a loop (line {line})"
            if line >= kernel_line:
                return f"binds again after the kernel is made (line {line})"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue  # its own scope
        inner = looped or isinstance(node, ast.For | ast.AsyncFor | ast.While | ast.comprehension)
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))
    return None


def _helper_made_here(
    owner: ast.FunctionDef, name: str, cell: Any, factories: list[ast.FunctionDef], aliases: set[str]
) -> ast.FunctionDef:
    """The ``@wp.func def name`` the factory ``owner`` defines and the kernel reads (warp-lang's
    ``create_fk_closure``: ``@wp.func def f(): return a`` beside ``@wp.kernel def k(...): ... f() + b``),
    hoisted beside the kernel: the capture recorded it as a func of that factory with its own
    closure cells (``recorder._cell``); the factory binds the name by that one ``def`` only."""
    chain = ".<locals>.".join(f.name for f in factories[: factories.index(owner) + 1])
    if not (
        isinstance(cell, dict)
        and cell.get("kind") == "func"
        and cell.get("qualname") == f"{chain}.<locals>.{name}"
        and isinstance(cell.get("cells"), dict)
    ):
        raise NotHermetic(
            f"`{name}`, which the factory `{owner.name}` binds, is not recorded as the `@wp.func` it defines "
            "(with its closure): its value is computed at run time"
        )
    found = [f for f in _functions(owner.body) if f.name == name]
    binds = sum(
        1
        for sub in ast.walk(owner)
        if (isinstance(sub, ast.Name) and sub.id == name and not isinstance(sub.ctx, ast.Load))
        or (isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and sub.name == name)
        or (isinstance(sub, ast.alias) and (sub.asname or sub.name) == name)
    )
    if len(found) != 1 or binds != 1:
        raise NotHermetic(
            f"the factory `{owner.name}` binds `{name}` more than by one `def` (overloads, a branch, an "
            "assignment): which one the kernel called is not in the text"
        )
    helper = found[0]
    dec = helper.decorator_list
    target = dec[0].func if dec and isinstance(dec[0], ast.Call) else (dec[0] if dec else None)
    if not (
        len(dec) == 1
        and isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id in aliases
        and target.attr == "func"
        and (not isinstance(dec[0], ast.Call) or (not dec[0].args and not dec[0].keywords))
    ):
        raise NotHermetic(f"`{name}` of the factory `{owner.name}` is not decorated with `@wp.func` alone")
    return helper


def literal_keyword(keyword: ast.keyword, aliases: set[str], names: bool = False) -> bool:
    """A keyword of ``@wp.kernel(...)`` a build takes as written: a literal, a tuple of int literals
    (``launch_bounds=(256, 1)``), or a dict of string keys to literals or Warp attributes
    (``module_options={"enable_backward": False, "deterministic": wp.DeterministicMode.RUN_TO_RUN}``).
    With ``names``, also a bare name as the value or a dict's value (newton's ``module_options={"block_dim":
    _TILE_BLOCK_DIM}``): the build reads it as the kernel's own reads (``_reads``: a constant of the
    text, a workspace import built from its text, else not hermetic), so it is built as written."""
    value = keyword.value
    if isinstance(value, ast.Constant) or (names and isinstance(value, ast.Name)):
        return True
    if isinstance(value, ast.Tuple):
        return all(isinstance(e, ast.Constant) and type(e.value) is int for e in value.elts)
    if not isinstance(value, ast.Dict):
        return False
    for key, item in zip(value.keys, value.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return False
        root: ast.expr = item
        while isinstance(root, ast.Attribute):
            root = root.value
        if (
            not isinstance(item, ast.Constant)
            and not (names and isinstance(item, ast.Name))
            and not (isinstance(item, ast.Attribute) and isinstance(root, ast.Name) and root.id in aliases)
        ):
            return False
    return True


def _recorded_value(value: Any, aliases: set[str]) -> ast.expr:
    """A value of the closure record's ``module_options``/``keywords`` as an expression: a literal,
    a list of ints as a tuple, ``{"warp": "Enum.MEMBER"}`` as ``wp.Enum.MEMBER``; ``NotHermetic``
    for anything else (the record is data: never evaluated, only spelled as literals and Warp names)."""
    if value is None or type(value) in (bool, int, str) or (type(value) is float and math.isfinite(value)):
        return ast.Constant(value)
    if isinstance(value, list) and all(type(v) is int for v in value):
        return ast.Tuple([ast.Constant(v) for v in value], ast.Load())
    if isinstance(value, dict) and set(value) == {"warp"} and isinstance(value["warp"], str):
        parts = value["warp"].split(".")
        if aliases and len(parts) == 2 and all(p.isidentifier() and not p.startswith("_") for p in parts):
            node: ast.expr = ast.Name(sorted(aliases)[0], ast.Load())
            for part in parts:
                node = ast.Attribute(node, part, ast.Load())
            return node
    raise NotHermetic(f"the capture recorded `{str(value)[:40]}` for a decorator keyword, not a literal")


def _recorded_keywords(
    tree: ast.Module,
    kernel: ast.FunctionDef,
    factories: list[ast.FunctionDef],
    closure: dict[str, Any],
    aliases: set[str],
    bound: dict[str, tuple[set[str], set[str]]],
    computation: Callable[[str], None],
) -> None:
    """The kernel's decorator keywords its factory computes (mujoco-warp 4.0.0:
    ``module_options = {"enable_backward": False}; if deterministic: module_options[...] = ...;
    @wp.kernel(module="unique", module_options=module_options)``) replaced, in ``kernel``, by the
    values the capture recorded, when the factory's code around the kernel and what it reads of
    the modules are the texts the capture ran (``computation``, ``_computation``): the edited
    factory then computes what it computed then, from the same arguments. ``NotHermetic``
    otherwise (the replay imports the module, WHD069)."""
    if len(kernel.decorator_list) != 1 or not isinstance(kernel.decorator_list[0], ast.Call):
        return
    # a keyword naming only module names (none the factory binds) is built as written: Python reads
    # those names from the module inside the factory too
    factory_names = nested_names(factories[0])  # and every factory's parameters and other bindings
    for params, stored in bound.values():
        factory_names |= params | stored
    computed = [
        k
        for k in kernel.decorator_list[0].keywords
        if k.arg
        and not (
            literal_keyword(k, aliases, names=True)
            and not {n.id for n in ast.walk(k.value) if isinstance(n, ast.Name)} & factory_names
        )
    ]
    if not computed:
        return
    said = ", ".join(f"`{k.arg}`" for k in computed)
    computation(f"`{kernel.name}`'s decorator takes {said} its factory computes")
    options = closure.get("module_options")
    keywords = closure.get("keywords")
    if not isinstance(options, dict) or not isinstance(keywords, dict):
        raise NotHermetic(f"the capture's record of `{kernel.name}`'s decorator is not a set of values")
    decorator = kernel.decorator_list[0]
    assert isinstance(decorator, ast.Call)
    if any(k.arg == "module" for k in computed):
        # a module the factory made or named (newton's `module = wp.get_module(name)` and
        # `module.options.update({...})`, then `@wp.kernel(module=module)`): the kernel is built in a
        # module of its own with the options the capture recorded of the one it was compiled in
        computed += [k for k in decorator.keywords if k.arg == "module_options" and k not in computed]
        if not any(k.arg == "module_options" for k in decorator.keywords):
            added = ast.keyword("module_options", ast.Dict([], []))
            decorator.keywords.append(added)
            computed.append(added)
    for keyword in computed:
        if keyword.arg == "module_options":
            keys: list[ast.expr | None] = [ast.Constant(str(k)) for k in options]
            keyword.value = ast.Dict(keys, [_recorded_value(v, aliases) for v in options.values()])
        elif keyword.arg == "module":
            keyword.value = ast.Constant("unique")
        elif keyword.arg == "name":  # the kernel's key (newton's `name=f"_svd_..._{rows}x{cols}"`):
            keyword.value = ast.Constant(kernel.name)  # a name in the generated code, nothing it computes
        elif keyword.arg in _RECORDED_KEYWORDS:
            keyword.value = _recorded_value(keywords.get(keyword.arg), aliases)
        else:
            raise NotHermetic(
                f"`{kernel.name}`'s decorator takes `{keyword.arg}` computed by its factory, a keyword the "
                "capture does not record"
            )
        ast.copy_location(keyword.value, kernel)


def _computation(
    tree: ast.Module, qualname: str, closure: dict[str, Any], reads: ReadsDigest | None
) -> str | None:
    """Why the values the factory of ``qualname`` computed at capture (a closure cell of a local it
    computes, a decorator keyword) may not be what the saved text computes from the same call's
    arguments (None: they are): its code around the kernel is not the text the capture ran
    (``identity.factory_digest``), or it reads names of the modules (``factory_reads.module_reads``)
    whose texts are not those the capture read (``factory_reads.reads_digest``: the binding
    statements of each, what they read in turn, workspace imports followed into their texts)."""
    recorded = closure.get("factory")
    definition = definition_of(closure)
    if not isinstance(recorded, str):
        return (
            "the capture recorded no value of it with a digest of the factory's code (a capture taken "
            "before such records existed: capture again)"
        )
    if recorded != factory_digest(tree, qualname, definition):
        return (
            "the factory's code around the kernel is not the text the capture ran, so the value may "
            "differ from the recorded one (capture again)"
        )
    try:
        names = factory_reads.module_reads(tree, qualname, definition)
    except factory_reads.Unreadable as exc:
        return str(exc)
    if not names:
        return None
    shown = ", ".join(f"`{n}`" for n in dict.fromkeys(n for n, _ in names))
    if reads is None:
        return f"the factory reads {shown} of its module, which this build cannot follow"
    try:
        now = reads(tree, qualname, definition)
    except NotHermetic as exc:
        return f"what the factory reads of the modules ({shown}) cannot be followed: {exc}"
    if not isinstance(closure.get("reads"), str):
        return (
            f"the factory reads {shown} of its module, and the capture recorded no digest of their texts "
            "(capture again)"
        )
    if now != closure["reads"]:
        return (
            f"the factory reads {shown}, whose definitions (or what they read) changed since the capture, "
            "so the value may differ from the recorded one (capture again)"
        )
    return None


# the keywords of ``@wp.kernel`` the capture records the values of (``recorder._decorator_values``)
_RECORDED_KEYWORDS = ("enable_backward", "grid_stride", "launch_bounds")


# ------------------------------------------------------------------ products of module-level calls
# ``simple_func_1 = create_func_simple()`` at a module's top level (warp-lang's
# tests/test_codegen_instancing.py): a `@wp.func`/`@wp.struct`/`@wp.kernel` made by calling a function
# of the same text. Such a statement is built by running it and the factory's ``def``, in the fresh
# namespace, when the factory's body holds nothing but its Warp definitions: what runs is then what
# runs for a module-level definition (decorators, annotations, defaults), the factory's parameters
# bound to the call's literal arguments, exactly as Python and Warp run the edited text.

_WARP_KINDS = ("func", "struct", "kernel")
_TYPE_NAMES = ("int", "float", "bool")


def _warp_decorated(node: ast.stmt, aliases: set[str]) -> bool:
    """A ``def``/``class`` with one decorator, ``@wp.func``/``@wp.struct``/``@wp.kernel``, of literal
    keywords only (what a module-level definition may have)."""
    if not isinstance(node, ast.FunctionDef | ast.ClassDef) or len(node.decorator_list) != 1:
        return False
    dec = node.decorator_list[0]
    target = dec.func if isinstance(dec, ast.Call) else dec
    if not (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id in aliases
        and target.attr in _WARP_KINDS
    ):
        return False
    return not isinstance(dec, ast.Call) or (
        not dec.args and all(k.arg and literal_keyword(k, aliases, names=True) for k in dec.keywords)
    )


def _literal_argument(node: ast.expr, aliases: set[str], shadowed: frozenset[str]) -> bool:
    """A value a call's argument may be: a literal, ``-`` of a number, a Warp attribute (``wp.vec3``),
    ``int``/``float``/``bool``, or a name of the module (a definition or an import, which the build
    must reach as any other, or it refuses)."""
    if isinstance(node, ast.Constant):
        return node.value is None or isinstance(node.value, int | float | bool | str)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
    if isinstance(node, ast.Name):
        return not hasattr(builtins, node.id) or node.id in shadowed or node.id in _TYPE_NAMES
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(node, ast.Attribute) and isinstance(root, ast.Name) and root.id in aliases


def _type_expression(node: ast.expr | None) -> bool:
    """An annotation evaluated when a ``def`` runs: names, attributes and subscripts of them, literals."""
    if node is None or isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _type_expression(node.value)
    if isinstance(node, ast.Subscript):
        return _type_expression(node.value) and _type_expression(node.slice)
    if isinstance(node, ast.Tuple):
        return all(_type_expression(e) for e in node.elts)
    return False


def _inert(body: list[ast.stmt], factory: str, tests: set[str], aliases: set[str], defined: set[str]) -> None:
    """``body`` of the factory holds only Warp definitions (added to ``defined``), ``if`` on a
    parameter bound to a literal (``tests``) and ``pass``; ``NotHermetic`` otherwise."""
    for i, stmt in enumerate(body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if isinstance(stmt, ast.Pass):
            continue
        if _warp_decorated(stmt, aliases):
            assert isinstance(stmt, ast.FunctionDef | ast.ClassDef)
            why = definition_time.runs_code(stmt, aliases)
            if why is not None:
                raise NotHermetic(why)
            defined.add(stmt.name)
            continue
        if isinstance(stmt, ast.If):
            test = (
                stmt.test.operand
                if isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
                else stmt.test
            )
            if not (isinstance(test, ast.Name) and test.id in tests):
                raise NotHermetic(
                    f"`{factory}` branches on `{ast.unparse(stmt.test)[:40]}`, not on a parameter bound to a "
                    "literal"
                )
            _inert(stmt.body, factory, tests, aliases, defined)
            _inert(stmt.orelse, factory, tests, aliases, defined)
            continue
        raise NotHermetic(
            f"`{factory}` runs `{ast.unparse(stmt).splitlines()[0][:50]}` besides defining Warp functions, "
            "structs or kernels (only those, `if` on a parameter and a `return` of them are built)"
        )


def product(
    node: ast.stmt, functions: dict[str, ast.FunctionDef], aliases: set[str], shadowed: frozenset[str]
) -> str | None:
    """The factory ``node`` calls when it is ``X = make(<literal arguments>)`` (or ``X, Y = make(...)``)
    and the module function ``make`` only defines Warp functions, structs or kernels and returns them
    (``_inert``): the statement is then a definition of ``X`` a build runs, with ``make``'s ``def``.
    None when ``node`` calls no function of the module; ``NotHermetic`` with the reason when it does
    otherwise (the module is then imported, WHD069)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
        return None
    call, target = node.value, node.targets[0]
    if not (isinstance(call.func, ast.Name) and call.func.id in functions):
        return None
    factory = functions[call.func.id]
    name = factory.name
    targets = target.elts if isinstance(target, ast.Tuple) else [target]
    if not all(isinstance(t, ast.Name) for t in targets):
        raise NotHermetic(f"the result of `{name}(...)` is bound to something else than names")
    if factory.decorator_list:
        raise NotHermetic(
            f"`{name}` is decorated (`@{ast.unparse(factory.decorator_list[0])}`): calling it runs that"
        )
    a = factory.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        raise NotHermetic(f"`{name}` takes `*`, `**` or keyword-only parameters")
    if any(isinstance(x, ast.Starred) for x in call.args) or any(k.arg is None for k in call.keywords):
        raise NotHermetic(f"`{name}(...)` is called with `*` or `**` arguments")
    params = [x.arg for x in a.args]
    bound: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    if len(call.args) > len(params):
        raise NotHermetic(f"`{name}(...)` is given more arguments than it takes")
    for k in call.keywords:
        if k.arg not in params or k.arg in bound:
            raise NotHermetic(f"`{name}(...)` is given `{k.arg}` twice or not as a parameter")
        bound[str(k.arg)] = k.value
    defaults = dict(zip(params[len(params) - len(a.defaults) :], a.defaults, strict=True))
    for param in params:
        value = bound.setdefault(param, defaults[param]) if param in defaults else bound.get(param)
        if value is None:
            raise NotHermetic(f"`{name}(...)` is not given `{param}`")
        if not _literal_argument(value, aliases, shadowed):
            raise NotHermetic(
                f"`{name}(...)`'s argument `{param}` is `{ast.unparse(value)[:40]}`, not a literal, a Warp "
                "attribute or a name of the module"
            )
    if not all(_type_expression(x.annotation) for x in a.args) or not _type_expression(factory.returns):
        raise NotHermetic(f"`{name}`'s annotations are not types")
    for sub in ast.walk(factory):
        if isinstance(sub, ast.Nonlocal | ast.Global | ast.Yield | ast.YieldFrom | ast.Await):
            raise NotHermetic(f"`{name}` declares `{type(sub).__name__.lower()}`")
    body = list(factory.body)
    last = body[-1] if body else None
    returned = last if isinstance(last, ast.Return) else None
    if returned is not None:
        body.pop()
    literal = {p for p, v in bound.items() if isinstance(v, ast.Constant)}
    defined: set[str] = set()
    _inert(body, name, literal, aliases, defined)
    value = returned.value if returned is not None else None
    names = value.elts if isinstance(value, ast.Tuple) else [value]
    if not all(isinstance(n, ast.Name) and n.id in defined for n in names) or len(names) != len(targets):
        raise NotHermetic(
            f"`{name}` does not return {'the' if len(targets) == 1 else len(targets)} Warp definition"
            f"{'' if len(targets) == 1 else 's'} it makes"
        )
    return name


def nested_names(node: ast.AST) -> set[str]:
    """The names of the ``def``s and ``class``es inside ``node`` (a factory's locals)."""
    return {
        sub.name
        for sub in ast.walk(node)
        if sub is not node and isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
