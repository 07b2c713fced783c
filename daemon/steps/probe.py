"""The bounds probe: a copy of one kernel with a Python ``assert`` before every array access.

Warp's own debug-mode bounds check sits in ``native/array.h`` and reports that header's
line. A Python ``assert`` in a kernel is emitted as ``assert(((void)"<source>", cond))``
under a ``#line <python line> "<file>"`` directive (debug builds carry line directives), so
when it fails Warp prints the Python file, the line and the source text of the node the
assert was placed at. The probe inserts, before each statement, for every subscript of an
array parameter of the kernel and every index position::

    assert int(<index>) >= -<array>.shape[<d>]
    assert int(<index>) < <array>.shape[<d>]

each carrying the source location of the subscript itself. The first access out of
bounds therefore dies with ``At '<file>:<line>'`` and the subscript's text (e.g.
``y[i + 1]``) instead of ``native/array.h:442``; the kernel's own accesses are never
reached for it. Subscripts are visited in evaluation order (inner before outer, so
``out[idx[i]]`` checks ``idx[i]`` first).

Only indices that can be evaluated twice without changing the kernel are checked: names,
constants, arithmetic, comparisons, array reads, ``.shape`` and a few pure builtins. An
index that calls anything else (``out[wp.atomic_add(count, 0, 1)]``, a user function) is
left alone, as are accesses inside ``@wp.func`` helpers; Warp's own assertion still covers
them, at the header's line. The probe is built in a Warp module of its own, in debug mode,
with its own kernel-cache key.
"""

from __future__ import annotations

import ast
import copy
import importlib
from typing import Any

import warp as _warp

from warp_harness.daemon.steps import KernelInfo

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped

is_array = importlib.import_module("warp._src.types").is_array

PROBE_SALT = "bounds-probe-1"
_PURE_CALLS = frozenset(
    {"int", "float", "abs", "min", "max", "tid", "int32", "int64", "uint32", "uint64", "floor", "ceil"}
)
_PURE_NODES = (
    ast.Name,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
    ast.expr_context,
)


def _pure(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name not in _PURE_CALLS or sub.keywords:
                return False
        elif not isinstance(sub, _PURE_NODES):
            return False
    return True


def _subscripts_in_order(node: ast.AST) -> list[ast.Subscript]:
    """Subscripts in evaluation order (children before their parent)."""
    out: list[ast.Subscript] = []

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Assign):  # the value is evaluated before the targets
            visit(n.value)
            for t in n.targets:
                visit(t)
            return
        if isinstance(n, ast.AugAssign | ast.AnnAssign):
            if n.value is not None:
                visit(n.value)
            visit(n.target)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)
        if isinstance(n, ast.Subscript):
            out.append(n)

    visit(node)
    return out


class BoundsProbe(ast.NodeTransformer):
    """Insert index asserts before the statements of a kernel (see the module docstring)."""

    def __init__(self, arrays: dict[str, int]) -> None:
        self.arrays = arrays  # parameter name -> ndim
        self.checked = 0

    def _checks(self, header: list[ast.AST]) -> list[ast.stmt]:
        checks: list[ast.stmt] = []
        for part in header:
            for sub in _subscripts_in_order(part):
                if not isinstance(sub.value, ast.Name) or sub.value.id not in self.arrays:
                    continue
                ndim = self.arrays[sub.value.id]
                index = sub.slice
                parts = list(index.elts) if isinstance(index, ast.Tuple) else [index]
                if len(parts) > ndim:
                    continue
                for d, idx in enumerate(parts):
                    if isinstance(idx, ast.Slice) or not _pure(idx):
                        continue
                    checks.extend(self._asserts(sub, sub.value.id, d, idx))
        return checks

    def _asserts(self, sub: ast.Subscript, name: str, dim: int, idx: ast.expr) -> list[ast.stmt]:
        def shape() -> ast.expr:
            return ast.Subscript(
                value=ast.Attribute(value=ast.Name(name, ast.Load()), attr="shape", ctx=ast.Load()),
                slice=ast.Constant(dim),
                ctx=ast.Load(),
            )

        def index() -> ast.expr:
            return ast.Call(func=ast.Name("int", ast.Load()), args=[copy.deepcopy(idx)], keywords=[])

        lower = ast.UnaryOp(op=ast.USub(), operand=shape())
        tests: list[ast.expr] = [
            ast.Compare(left=index(), ops=[ast.GtE()], comparators=[lower]),
            ast.Compare(left=index(), ops=[ast.Lt()], comparators=[shape()]),
        ]
        out: list[ast.stmt] = []
        for test in tests:
            node = ast.Assert(test=test, msg=None)
            # the location of the subscript: Warp's #line and the source text it prints
            for n in ast.walk(node):
                ast.copy_location(n, sub)
            out.append(node)
        self.checked += 1
        return out

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        new: list[ast.stmt] = []
        for stmt in body:
            if isinstance(stmt, ast.If | ast.While):
                new.extend(self._checks([stmt.test]))
                stmt.body = self._body(stmt.body)
                stmt.orelse = self._body(stmt.orelse)
            elif isinstance(stmt, ast.For):
                new.extend(self._checks([stmt.iter]))
                stmt.body = self._body(stmt.body)
                stmt.orelse = self._body(stmt.orelse)
            elif isinstance(stmt, ast.With):
                new.extend(self._checks([item.context_expr for item in stmt.items]))
                stmt.body = self._body(stmt.body)
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                pass
            else:
                new.extend(self._checks([stmt]))
            new.append(stmt)
        return new

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body = self._body(node.body)
        return node


def array_params(kernel: Any) -> dict[str, int]:
    return {a.label: int(a.type.ndim) for a in kernel.adj.args if is_array(a.type)}


def probe_kernel(info: KernelInfo) -> tuple[Any, int]:
    """(the probe copy of ``info``'s kernel in a debug Warp module of its own, accesses checked)."""
    source = info.kernel.module
    module = wp.get_module(f"{source.name}__wh_bounds_{info.name}")
    module.options = dict(source.options)
    module.options["mode"] = "debug"
    module.options["enable_backward"] = False
    module.mark_modified()
    transformer = BoundsProbe(array_params(info.kernel))
    kernel = wp.Kernel(
        func=info.kernel.func,
        key=info.kernel.key,
        module=module,
        options=dict(info.kernel.options),
        code_transformers=[transformer],
    )
    return kernel, transformer.checked
