"""Constant folding of module-level values (``TILE_M = wp.constant(8)``, ``N = 4 * TILE_M``)
and small linear forms (``n + 1``) for comparing launch dims with array extents."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from warp_harness.model.imports import ImportMap
from warp_harness.model.index import child_nodes

Value = int | float | bool | tuple["Value", ...]

_BINOPS: dict[type[ast.operator], Callable[[object, object], object]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}

# conversions that keep the folded value (wp.constant(8), wp.int32(8), int(8.0))
_VALUE_WRAPPERS = {
    "constant",
    "static",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def fold(node: ast.expr, env: Mapping[str, Value], imports: ImportMap | None = None) -> Value | None:
    """Evaluate ``node`` if it is built only from literals and names in ``env``; else None."""
    try:
        return _fold(node, env, imports, 0)
    except (ArithmeticError, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _fold(node: ast.expr, env: Mapping[str, Value], imports: ImportMap | None, depth: int) -> Value | None:
    if depth > 50:
        return None
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool | int | float):
            return value
        return None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Tuple | ast.List):
        items = [_fold(e, env, imports, depth + 1) for e in node.elts]
        if any(i is None for i in items):
            return None
        return tuple(i for i in items if i is not None)
    if isinstance(node, ast.UnaryOp):
        operand = _fold(node.operand, env, imports, depth + 1)
        if not _is_number(operand):
            return None
        if isinstance(node.op, ast.USub):
            return -operand  # type: ignore[operator]
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Invert) and isinstance(operand, int):
            return ~operand
        return None
    if isinstance(node, ast.BinOp):
        left = _fold(node.left, env, imports, depth + 1)
        right = _fold(node.right, env, imports, depth + 1)
        op = _BINOPS.get(type(node.op))
        if op is None or not _is_number(left) or not _is_number(right):
            return None
        if isinstance(node.op, ast.Pow) and abs(right) > 64:  # type: ignore[arg-type]
            return None
        result = op(left, right)
        return result if _is_number(result) else None  # type: ignore[return-value]
    if isinstance(node, ast.Call) and len(node.args) >= 1 and not node.keywords:
        func = node.func
        name: str | None = None
        if imports is not None:
            name = imports.warp_name(func)
        if name is None and isinstance(func, ast.Name) and func.id in ("int", "float", "min", "max", "abs"):
            name = func.id
        if name is None:
            return None
        args = [_fold(a, env, imports, depth + 1) for a in node.args]
        if any(not _is_number(a) for a in args):
            return None
        numbers = [a for a in args if _is_number(a)]
        if name in _VALUE_WRAPPERS and len(numbers) == 1:
            if name.startswith(("int", "uint")):
                return int(numbers[0])  # type: ignore[arg-type]
            if name.startswith("float"):
                return float(numbers[0])  # type: ignore[arg-type]
            return numbers[0]
        if name == "int" and len(numbers) == 1:
            return int(numbers[0])  # type: ignore[arg-type]
        if name == "float" and len(numbers) == 1:
            return float(numbers[0])  # type: ignore[arg-type]
        if name in ("min", "max") and len(numbers) >= 2:
            return (min if name == "min" else max)(numbers)  # type: ignore[type-var]
        if name == "abs" and len(numbers) == 1:
            return abs(numbers[0])  # type: ignore[arg-type]
    return None


_COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}


def fold_static(node: ast.expr, env: Mapping[str, Value], imports: ImportMap | None = None) -> Value | None:
    """What Python computes for ``node`` as Warp evaluates a ``wp.static(...)`` argument: `fold`, plus
    comparisons, ``and`` / ``or`` / ``not`` and conditional expressions (a flag such as
    ``wp.static(N_DOFS > 3 and not USE_FD)``). None when any name it needs has no known value.

    Not part of `fold`: Warp itself folds none of these outside ``wp.static`` (``if N > 3:`` compiles both
    branches), so the analyses of runtime code must not see them as constants."""
    try:
        return _fold_static(node, env, imports, 0)
    except (ArithmeticError, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _fold_static(
    node: ast.expr, env: Mapping[str, Value], imports: ImportMap | None, depth: int
) -> Value | None:
    if depth > 50:
        return None
    if isinstance(node, ast.Compare):
        left = _fold_static(node.left, env, imports, depth + 1)
        if left is None:
            return None
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            compare = _COMPARISONS.get(type(op))
            right = _fold_static(comparator, env, imports, depth + 1)
            if compare is None or right is None:
                return None
            if not compare(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        # Python's own short-circuit: the first operand that decides is the value
        value: Value | None = None
        for part in node.values:
            value = _fold_static(part, env, imports, depth + 1)
            if value is None:
                return None
            if bool(value) is isinstance(node.op, ast.Or):
                return value
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        operand = _fold_static(node.operand, env, imports, depth + 1)
        return None if operand is None else not operand
    if isinstance(node, ast.IfExp):
        test = _fold_static(node.test, env, imports, depth + 1)
        if test is None:
            return None
        return _fold_static(node.body if test else node.orelse, env, imports, depth + 1)
    if (
        isinstance(node, ast.Call)
        and imports is not None
        and imports.warp_name(node.func) == "static"
        and len(node.args) == 1
        and not node.keywords
    ):
        return _fold_static(node.args[0], env, imports, depth + 1)
    return _fold(node, env, imports, depth + 1)


@dataclass
class ModuleConstants:
    """Module-level names with a foldable value. A name assigned twice with different values is dropped."""

    values: dict[str, Value] = field(default_factory=dict)
    # names created with wp.constant(...)
    warp_constants: set[str] = field(default_factory=set)
    # name -> line of its (single) assignment, for fixes that rewrite the value
    definitions: dict[str, ast.Assign | ast.AnnAssign] = field(default_factory=dict)

    @classmethod
    def from_tree(
        cls, tree: ast.Module, imports: ImportMap, globals_declared: Iterable[ast.Global] = ()
    ) -> ModuleConstants:
        """``globals_declared``: the file's ``global`` statements (a function may rebind those names)."""
        result = cls()
        conflicting: set[str] = {name for declaration in globals_declared for name in declaration.names}
        for stmt in tree.body:
            target: ast.expr | None = None
            value: ast.expr | None = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                target, value = stmt.target, stmt.value
            if not isinstance(target, ast.Name) or value is None:
                for t in _assigned_names(stmt):
                    conflicting.add(t)
                continue
            name = target.id
            folded = fold(value, result.values, imports)
            if name in result.values or name in conflicting:
                if result.values.get(name) != folded:
                    conflicting.add(name)
                continue
            if folded is None:
                conflicting.add(name)
                continue
            result.values[name] = folded
            assert isinstance(stmt, ast.Assign | ast.AnnAssign)
            result.definitions[name] = stmt
            if isinstance(value, ast.Call) and imports.warp_name(value.func) == "constant":
                result.warp_constants.add(name)
        for name in conflicting:
            result.values.pop(name, None)
            result.definitions.pop(name, None)
            result.warp_constants.discard(name)
        return result


def _assigned_names(stmt: ast.stmt) -> list[str]:
    """The module-level names ``stmt`` (not a plain ``name = value``) may bind: its targets, and for a block
    (``if`` / ``try`` / ``with`` / ``for`` / ``while`` / ``match``) every name stored anywhere in it outside
    nested functions and classes (``if os.environ.get(...): FLAG = False`` makes ``FLAG`` unknown)."""
    names: list[str] = []
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.extend((alias.asname or alias.name).split(".")[0] for alias in node.names)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.append(node.id)
        stack.extend(child_nodes(node))
    return names


@dataclass(frozen=True)
class Linear:
    """``const + sum(coeff * symbol)`` over opaque symbols (source text of sub-expressions)."""

    const: float
    terms: tuple[tuple[str, float], ...] = ()

    def __sub__(self, other: Linear) -> Linear:
        merged: dict[str, float] = dict(self.terms)
        for sym, coeff in other.terms:
            merged[sym] = merged.get(sym, 0.0) - coeff
        return Linear(self.const - other.const, tuple(sorted((s, c) for s, c in merged.items() if c != 0)))

    @property
    def is_constant(self) -> bool:
        return not self.terms


def linear(
    node: ast.expr,
    env: Mapping[str, Value],
    imports: ImportMap | None = None,
    aliases: Mapping[str, ast.expr] | None = None,
    depth: int = 0,
) -> Linear | None:
    """A linear form of ``node``, or None when it is not linear in its symbols."""
    if depth > 20:
        return None
    folded = fold(node, env, imports)
    if _is_number(folded):
        return Linear(float(folded))  # type: ignore[arg-type]
    if isinstance(node, ast.Name) and aliases and node.id in aliases:
        return linear(aliases[node.id], env, imports, aliases, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        left = linear(node.left, env, imports, aliases, depth + 1)
        right = linear(node.right, env, imports, aliases, depth + 1)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Sub):
            return left - right
        return left - (Linear(0.0) - right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for const_side, other in ((node.left, node.right), (node.right, node.left)):
            c = fold(const_side, env, imports)
            if _is_number(c):
                inner = linear(other, env, imports, aliases, depth + 1)
                if inner is None:
                    return None
                scale = float(c)  # type: ignore[arg-type]
                return Linear(inner.const * scale, tuple((s, k * scale) for s, k in inner.terms if k * scale))
        return Linear(0.0, ((ast.unparse(node), 1.0),))
    if isinstance(node, ast.Name | ast.Attribute | ast.Subscript | ast.Call | ast.BinOp):
        return Linear(0.0, ((ast.unparse(node), 1.0),))
    return None
