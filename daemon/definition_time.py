"""What Python runs when a Warp ``def`` or ``class`` statement runs, and whether a build may run it.

Warp never lets Python run a kernel's or a func's body: it reads the text and generates code. But the
``def`` statement itself evaluates its decorators, its parameters' annotations and default values and
its return annotation, and a ``class`` statement runs its body (a struct's field annotations and
values). A hermetic build runs those statements in the process that launches and times kernels, so
an expression there is code of the module under test running in that process: ``def f(x: int =
patch_the_timer())`` would run before any kernel does. A build runs a definition only when all of it
is inert: literals, names, attributes, subscripts, tuples and lists, arithmetic on them, and calls
of Warp's type constructors (``wp.array(dtype=float)``, ``wp.types.vector(length=3, dtype=float)``)
with such arguments. What real code writes there (newton, mujoco-warp, warp-lang's own tests and
``warp.fem``: 8,903 definitions) is all of that form.
"""

from __future__ import annotations

import ast
import re

# Warp's type constructors, by their last name (``wp.array``, ``wp.types.matrix``, ``wp.vec3``):
# they make types, launch nothing, read no workspace value but their arguments
_TYPE_CONSTRUCTOR = re.compile(
    r"(indexed)?(fabric)?array(array)?([1-4]d)?|fixedarray|vector|matrix|constant"
    r"|(vec|mat|quat|transform|spatial_vector|spatial_matrix)\w*"
)
_INERT_NODES = (
    ast.Constant,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Slice,
    ast.UnaryOp,
    ast.BinOp,
    ast.keyword,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
)


def _warp_constructor(func: ast.expr, aliases: set[str]) -> bool:
    """``func`` is ``wp.<constructor>`` or ``wp.types.<constructor>`` (``wp`` an alias of warp)."""
    if not isinstance(func, ast.Attribute) or _TYPE_CONSTRUCTOR.fullmatch(func.attr) is None:
        return False
    root: ast.expr = func.value
    if isinstance(root, ast.Attribute) and root.attr == "types":
        root = root.value
    return isinstance(root, ast.Name) and root.id in aliases


def _code_in(expr: ast.expr, aliases: set[str]) -> ast.AST | None:
    """The first part of ``expr`` that runs code when evaluated (a call of anything but a Warp type
    constructor, a lambda, a comprehension, an f-string, ...); None when it is inert."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            if not _warp_constructor(node.func, aliases):
                return node
        elif not isinstance(node, _INERT_NODES):
            return node
    return None


def _evaluated(node: ast.FunctionDef | ast.ClassDef) -> list[ast.expr]:
    """The expressions Python evaluates when the statement ``node`` runs, but its decorators (which
    a build checks on their own): a ``def``'s annotations and defaults; a ``class``'s bases,
    keywords, and its body's annotations and values."""
    if isinstance(node, ast.FunctionDef):
        a = node.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        annotations = [p.annotation for p in params if p is not None and p.annotation is not None]
        defaults = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
        return [*annotations, *defaults, *([node.returns] if node.returns is not None else [])]
    found: list[ast.expr] = [*node.bases, *(k.value for k in node.keywords)]
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign):
            found += [stmt.annotation, *([stmt.value] if stmt.value is not None else [])]
    return found


def _plain_method(node: ast.FunctionDef) -> bool:
    """A method of a struct whose ``def`` Python runs and nothing else calls by itself: no
    decorator, not a special name (``__class_getitem__``, ``__init_subclass__``: Python calls those)."""
    return not node.decorator_list and not (node.name.startswith("__") and node.name.endswith("__"))


def runs_code(node: ast.FunctionDef | ast.ClassDef, aliases: set[str]) -> str | None:
    """Why running the Warp definition ``node`` would run code of the module (see the module's
    docstring); None when it runs none. A struct's body holds only a docstring, ``pass``, annotated
    fields and plain methods (``_plain_method``)."""
    if isinstance(node, ast.ClassDef):
        for stmt in node.body:
            docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            if isinstance(stmt, ast.FunctionDef) and _plain_method(stmt):
                why = runs_code(stmt, aliases)
                if why is not None:
                    return why
            elif not (docstring or isinstance(stmt, ast.Pass | ast.AnnAssign)):
                first = ast.unparse(stmt).splitlines()[0][:50]
                return f"`{node.name}`'s body runs `{first}` when the class statement runs"
    for expr in _evaluated(node):
        part = _code_in(expr, aliases)
        if part is not None:
            return (
                f"`{node.name}`'s {'signature' if isinstance(node, ast.FunctionDef) else 'body'} holds "
                f"`{ast.unparse(part)[:50]}`, which Python runs when the definition runs (only literals, "
                "names and Warp's type constructors are built)"
            )
    return None
