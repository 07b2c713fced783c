"""Integer arithmetic in a kernel as Warp compiles it (measured with warp-lang 1.19 on the CPU).

- ``a / b`` with two integer operands is C's integer division, truncated toward zero (``(i - 5) / 2`` is
  ``-2`` for ``i = 0``); Python's true division never happens, and ``float(i / n)`` converts the truncated
  quotient. `int_division` finds such divisions.
- int32 arithmetic wraps on overflow (two's complement; an int literal above 2**31 - 1 is truncated to
  int32 as well), so a product by a hashing constant (``i * 73856093``, ``seed * 1103515245``) turns
  negative for most inputs, and ``%`` keeps the sign of its left operand (C semantics): ``h % n`` lies in
  ``(-n, n)``. `Overflow` finds int32 values that may be negative for that reason, and remainders of them.

Both answer only what they are sure of; every unsure case says "no".
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from warp_harness.model.constants import Value, fold
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import around_body, full_body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.types import INT32, Scalar
from warp_harness.model.walk import walk

# a product of a non-constant int32 by a constant at least this large overflows for |x| >= 2048: every
# hashing multiplier (73856093, 19349663, 83492791, 16777619, 1103515245, 2654435761) is far above it
BIG_MULTIPLIER = 1 << 20

# operators through which a value that may be negative stays one that may be negative
_KEEPS_SIGN = (ast.Add, ast.Sub, ast.Mult, ast.BitXor, ast.BitOr, ast.Mod, ast.Div, ast.FloorDiv, ast.RShift)
# calls that pass their argument's value through unchanged (as far as the sign goes)
_PASS_THROUGH = {"int", "int32"}


def is_int(types: KernelTypes, node: ast.expr) -> bool:
    t = types.of(node)
    return isinstance(t, Scalar) and t.is_int


def int_division(types: KernelTypes, node: ast.AST) -> bool:
    """``node`` is ``a / b`` with both operands of an integer type: Warp divides as C does (truncating)."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and is_int(types, node.left)
        and is_int(types, node.right)
    )


def _stored(target: ast.expr) -> set[str]:
    return {n.id for n in walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _big_constant(node: ast.expr, constants: Mapping[str, Value], imports: ImportMap) -> bool:
    value = fold(node, constants, imports)
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= BIG_MULTIPLIER


def may_overflow(function: ast.FunctionDef, constants: Mapping[str, Value], imports: ImportMap) -> bool:
    """Whether ``function``'s body holds a product by a constant of at least `BIG_MULTIPLIER` (``x * C``,
    ``x *= C``): without one `Overflow` finds no value that may be negative. Most kernels have none, and
    this costs a look at each product instead of `Overflow`'s walks of the whole function."""
    index = full_body_index(function)
    for node in index.of(ast.BinOp):
        if isinstance(node.op, ast.Mult) and (
            _big_constant(node.left, constants, imports) or _big_constant(node.right, constants, imports)
        ):
            return True
    for aug in index.of(ast.AugAssign):
        if isinstance(aug.op, ast.Mult) and (
            _big_constant(aug.value, constants, imports) or _big_constant(aug.target, constants, imports)
        ):
            return True
    return False


def _bindings(function: ast.FunctionDef) -> tuple[dict[str, list[ast.AST]], set[str]]:
    """Each local's binding statements (assignments, augmented assignments, loop targets), and the names
    any binding of which cannot be followed (tuple unpacking, loop targets, ``with ... as``)."""
    bound: dict[str, list[ast.AST]] = {}
    opaque: set[str] = set()
    for node in walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node)
                else:
                    opaque.update(_stored(target))
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound.setdefault(node.target.id, []).append(node)
        elif isinstance(node, ast.For | ast.comprehension | ast.withitem | ast.NamedExpr):
            stored = node.optional_vars if isinstance(node, ast.withitem) else node.target
            if stored is not None:
                opaque.update(_stored(stored))
    for arg in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]:
        opaque.add(arg.arg)
    return bound, opaque


def _compared(function: ast.FunctionDef) -> set[str]:
    """Names a comparison looks at (a sign check such as ``if b < 0: b += n`` may repair them)."""
    names: set[str] = set()
    before, after = around_body(function)  # arguments' defaults, decorators
    outside = [n for part in (*before, *after) for n in walk(part) if isinstance(n, ast.Compare)]
    for node in [*full_body_index(function).of(ast.Compare), *outside]:
        names.update(n.id for n in walk(node) if isinstance(n, ast.Name))
    return names


def _shifted_remainder(node: ast.BinOp) -> bool:
    """``h % n + n`` (either order): a remainder moved into ``[0, 2n)``, the usual first half of
    ``(h % n + n) % n``."""
    if not isinstance(node.op, ast.Add):
        return False
    for remainder, other in ((node.left, node.right), (node.right, node.left)):
        if (
            isinstance(remainder, ast.BinOp)
            and isinstance(remainder.op, ast.Mod)
            and ast.dump(remainder.right) == ast.dump(other)
        ):
            return True
    return False


class Overflow:
    """Which int32 values of one kernel or function may be negative because a product overflowed."""

    def __init__(
        self,
        function: ast.FunctionDef,
        types: KernelTypes,
        constants: Mapping[str, Value],
        imports: ImportMap,
    ) -> None:
        self.types = types
        self.constants = constants
        self.imports = imports
        self.bindings, self.opaque = _bindings(function)
        self.compared = _compared(function)
        self._names: dict[str, bool] = {}
        self._visiting: set[str] = set()

    # the constant a node folds to, when it is an integer
    def _int_constant(self, node: ast.expr) -> int | None:
        if isinstance(node, ast.Name) and node.id in self.bindings:
            return None  # a local, whatever a module constant of the same name holds
        value = fold(node, self.constants, self.imports)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _type(self, node: ast.expr) -> object:
        if isinstance(node, ast.Name) and id(node) not in self.types.expr:
            return self.types.variables.get(node.id)  # a name of a binding `_binding_value` rebuilt
        return self.types.of(node)

    def overflowing_product(self, node: ast.expr) -> bool:
        """``x * C`` with ``x`` a non-constant int32 and ``|C| >= 2**20``: wraps for almost every ``x``."""
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
            return False
        for constant, other in ((node.left, node.right), (node.right, node.left)):
            value = self._int_constant(constant)
            if (
                value is not None
                and abs(value) >= BIG_MULTIPLIER
                and self._int_constant(other) is None
                and self._type(other) == INT32
            ):
                return True
        return False

    def maybe_negative(self, node: ast.expr) -> bool:
        """``node`` is an int32 value that an overflowing product may have made negative."""
        if self.overflowing_product(node):
            return True
        if isinstance(node, ast.BinOp):
            if _shifted_remainder(node):
                return False
            if isinstance(node.op, ast.Mod | ast.Div | ast.FloorDiv | ast.RShift):
                return self.maybe_negative(node.left)
            if isinstance(node.op, _KEEPS_SIGN):
                return self.maybe_negative(node.left) or self.maybe_negative(node.right)
            return False  # `&` with a mask, shifts left: not followed
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Invert | ast.UAdd):
            return self.maybe_negative(node.operand)
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            name = node.func.id if isinstance(node.func, ast.Name) else self.imports.warp_name(node.func)
            if name in _PASS_THROUGH:
                return self.maybe_negative(node.args[0])
            return False
        if isinstance(node, ast.Name):
            return self._name(node.id)
        return False

    def _name(self, name: str) -> bool:
        """Every binding of the local may be negative (literal constants aside, as an initial value) and
        no comparison looks at it."""
        if name in self._names:
            return self._names[name]
        if name in self._visiting or name in self.opaque or name in self.compared:
            return False
        bindings = self.bindings.get(name)
        if not bindings:
            return False
        self._visiting.add(name)
        try:
            negative = False
            for binding in bindings:
                value = self._binding_value(binding)
                if value is None:
                    return self._remember(name, False)
                if self.maybe_negative(value):
                    negative = True
                elif self._int_constant(value) is None:
                    return self._remember(name, False)
            return self._remember(name, negative)
        finally:
            self._visiting.discard(name)

    def _remember(self, name: str, value: bool) -> bool:
        self._names[name] = value
        return value

    @staticmethod
    def _binding_value(binding: ast.AST) -> ast.expr | None:
        if isinstance(binding, ast.Assign):
            return binding.value
        if isinstance(binding, ast.AnnAssign):
            return binding.value
        if isinstance(binding, ast.AugAssign) and isinstance(binding.target, ast.Name):
            return ast.BinOp(left=ast.Name(binding.target.id, ast.Load()), op=binding.op, right=binding.value)
        return None

    def negative_remainder(self, node: ast.expr) -> ast.BinOp | None:
        """The ``h % n`` that ``node`` is (or that the local ``node`` names, bound once and never compared),
        when ``h`` may be negative: the remainder then lies in ``(-n, 0]`` for those values."""
        if isinstance(node, ast.Name):
            bindings = self.bindings.get(node.id, [])
            if len(bindings) != 1 or node.id in self.opaque or node.id in self.compared:
                return None
            value = self._binding_value(bindings[0])
            if value is None or isinstance(bindings[0], ast.AugAssign):
                return None
            node = value
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            name = node.func.id if isinstance(node.func, ast.Name) else self.imports.warp_name(node.func)
            if name in _PASS_THROUGH:
                return self.negative_remainder(node.args[0])
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Mod)
            and self.types.of(node) == INT32
            and self.maybe_negative(node.left)
        ):
            return node
        return None


__all__ = ["BIG_MULTIPLIER", "Overflow", "int_division", "is_int", "may_overflow"]
