"""Thread uniformity: which expressions of a kernel certainly have the same value in every thread."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from warp_harness.model.constants import fold
from warp_harness.model.index import child_nodes
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import (
    UNKNOWN,
    Matrix,
    Quaternion,
    Transform,
    TupleType,
    Vector,
    named_warp_type,
)
from warp_harness.model.walk import walk

if TYPE_CHECKING:
    from warp_harness.model.module import ModuleModel

# calls whose result depends only on their arguments (a thread-independent argument list gives a
# thread-independent result)
_PURE = frozenset(
    "min max abs clamp floor ceil round rint trunc frac mod sign select where sqrt cbrt exp log log2 log10 "
    "pow sin cos tan asin acos atan atan2 sinh cosh tanh degrees radians length length_sq dot cross "
    "normalize transpose determinant inverse int float bool len isfinite isnan isinf nonzero static "
    "constant range".split()
)
_RELATION_FLIP = {
    ast.Lt: ast.Gt,
    ast.LtE: ast.GtE,
    ast.Gt: ast.Lt,
    ast.GtE: ast.LtE,
    ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}
_RELATION_NEGATE = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


class Reach(IntEnum):
    """How many threads of a launch certainly or possibly run a statement, as far as conditions go."""

    ONE = 0  # a condition may let a single thread through (`i == 0`, `ids[i] == k`, a claim by atomic)
    SOME = 1  # a thread-dependent condition lets some through: maybe many (`if speed[i] > eps:`)
    MANY = 2  # every thread (thread-independent conditions, `i < n`)


def names_stored(node: ast.AST) -> list[str]:
    """The names ``node`` binds, in ``ast.walk``'s order."""
    return [n.id for n in walk(node) if type(n) is ast.Name and isinstance(n.ctx, ast.Store)]


@dataclass
class _Assignment:
    """One assignment of names in a kernel, with what it depends on."""

    names: list[str]
    value: ast.expr | None  # None: the assigned value is never thread-independent
    # conditions / loop ranges the assignment depends on (control dependence)
    controls: list[ast.expr] = field(default_factory=list)


class Uniformity:
    """Which expressions of a kernel certainly have the same value in every thread.

    A greatest fixed point over the kernel's local assignments: a local is thread-independent
    when every assignment to it is, and none sits under a thread-dependent condition or loop.
    Thread indices, array element reads (other threads may write them), calls to `@wp.func`s
    and to anything but pure builtins are thread-dependent.
    """

    def __init__(self, model: ModuleModel, kernel: KernelDef, types: KernelTypes) -> None:
        self.model = model
        self.kernel = kernel
        self.types = types
        self.params = {p.name for p in kernel.params}
        self.assignments: list[_Assignment] = []
        # nodes to treat as thread-independent (the element read of the update being judged)
        self.assume: set[int] = set()
        self._collect(kernel.node.body, [], in_loop_with_exit=False)
        self.locals = {n for a in self.assignments for n in a.names}
        self.uniform_locals = set(self.locals)
        changed = True
        while changed:
            changed = False
            for assignment in self.assignments:
                if not any(n in self.uniform_locals for n in assignment.names):
                    continue
                ok = (
                    assignment.value is not None
                    and self.uniform(assignment.value)
                    and all(self.uniform(c) for c in assignment.controls)
                )
                if not ok:
                    self.uniform_locals.difference_update(assignment.names)
                    changed = True
        self.assign_counts: dict[str, int] = {}
        for assignment in self.assignments:
            for n in assignment.names:
                self.assign_counts[n] = self.assign_counts.get(n, 0) + 1

    def _collect(self, body: list[ast.stmt], controls: list[ast.expr], in_loop_with_exit: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                value: ast.expr | None = None if in_loop_with_exit else stmt.value
                for target in stmt.targets:
                    names = names_stored(target)
                    if isinstance(target, ast.Name):
                        self.assignments.append(_Assignment(names, value, list(controls)))
                    elif names:
                        # tuple unpacking: each name is as uniform as the whole value
                        self.assignments.append(_Assignment(names, value, list(controls)))
            elif isinstance(stmt, ast.AnnAssign):
                if isinstance(stmt.target, ast.Name):
                    self.assignments.append(
                        _Assignment(
                            [stmt.target.id], None if in_loop_with_exit else stmt.value, list(controls)
                        )
                    )
            elif isinstance(stmt, ast.AugAssign):
                if isinstance(stmt.target, ast.Name):
                    combined = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
                    self.assignments.append(
                        _Assignment([stmt.target.id], None if in_loop_with_exit else combined, list(controls))
                    )
            elif isinstance(stmt, ast.For):
                exits = loop_exits(stmt.body)
                names = names_stored(stmt.target)
                if names:
                    self.assignments.append(_Assignment(names, stmt.iter, list(controls)))
                self._collect(stmt.body, [*controls, stmt.iter], in_loop_with_exit or exits)
                self._collect(stmt.orelse, [*controls, stmt.iter], in_loop_with_exit or exits)
            elif isinstance(stmt, ast.While):
                exits = loop_exits(stmt.body)
                self._collect(stmt.body, [*controls, stmt.test], in_loop_with_exit or exits)
                self._collect(stmt.orelse, [*controls, stmt.test], in_loop_with_exit or exits)
            elif isinstance(stmt, ast.If):
                self._collect(stmt.body, [*controls, stmt.test], in_loop_with_exit)
                self._collect(stmt.orelse, [*controls, stmt.test], in_loop_with_exit)
            else:
                # anything else that binds names (with, try, ...) is not understood: not uniform
                names = names_stored(stmt)
                if names:
                    self.assignments.append(_Assignment(names, None, list(controls)))

    def uniform(self, node: ast.expr) -> bool:
        if id(node) in self.assume or isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return node.id in self.uniform_locals
            return True  # a parameter, a module constant, a type or Warp itself
        if isinstance(node, ast.Attribute):
            return self.uniform(node.value)
        if isinstance(node, ast.Subscript):
            base = self.types.of(node.value)
            if not isinstance(base, TupleType | Vector | Matrix | Quaternion | Transform):
                return False  # array elements can differ between reads; unknown bases too
            return self.uniform(node.value) and self.uniform(node.slice)
        if isinstance(node, ast.BinOp):
            return self.uniform(node.left) and self.uniform(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.uniform(node.operand)
        if isinstance(node, ast.BoolOp):
            return all(self.uniform(v) for v in node.values)
        if isinstance(node, ast.Compare):
            return self.uniform(node.left) and all(self.uniform(c) for c in node.comparators)
        if isinstance(node, ast.IfExp):
            return self.uniform(node.test) and self.uniform(node.body) and self.uniform(node.orelse)
        if isinstance(node, ast.Tuple | ast.List):
            return all(self.uniform(e) for e in node.elts)
        if isinstance(node, ast.Slice):
            return all(self.uniform(p) for p in (node.lower, node.upper, node.step) if p is not None)
        if isinstance(node, ast.Call):
            if not self._pure(node.func):
                return False
            return all(self.uniform(a) for a in node.args) and all(
                self.uniform(k.value) for k in node.keywords
            )
        return False

    def _pure(self, func: ast.expr) -> bool:
        imports = self.model.imports
        name = imports.warp_name(func) or imports.math_name(func)
        if (
            name is None
            and isinstance(func, ast.Name)
            and func.id not in self.model.funcs
            and func.id not in self.locals
            and func.id not in self.params
        ):
            name = (
                func.id
                if func.id in ("min", "max", "abs", "int", "float", "bool", "len", "round", "pow", "range")
                else None
            )
        if name is None:
            return False
        if name in _PURE:
            return True
        return named_warp_type(name) is not UNKNOWN  # a type constructor: wp.float32(n), wp.vec3(...)

    def tid_var(self, node: ast.expr) -> str | None:
        """The name if ``node`` is a thread index variable bound once, by ``wp.tid()``."""
        if (
            isinstance(node, ast.Name)
            and node.id in self.types.tid_vars
            and self.assign_counts.get(node.id) == 1
        ):
            return node.id
        return None

    def reaches_many(self, test: ast.expr, positive: bool) -> bool:
        """Whether the threads for which ``test`` is ``positive`` are certainly several (if the launch is)."""
        if self.uniform(test):
            return True
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.reaches_many(test.operand, not positive)
        if isinstance(test, ast.BoolOp):
            if isinstance(test.op, ast.And) and positive:
                return all(self.reaches_many(v, True) for v in test.values)
            if isinstance(test.op, ast.Or) and not positive:
                return all(self.reaches_many(v, False) for v in test.values)
            return False
        if not isinstance(test, ast.Compare) or len(test.ops) != 1:
            return False
        left, op_node, right = test.left, test.ops[0], test.comparators[0]
        op: type[ast.cmpop] = type(op_node)
        if op not in _RELATION_NEGATE:
            return False
        if not positive:
            op = _RELATION_NEGATE[op]
        if self.tid_var(left) is None:
            left, right = right, left
            op = _RELATION_FLIP[op]
        if self.tid_var(left) is None or not self.uniform(right):
            return False
        value = self._fold(right)
        if op is ast.NotEq:
            return True
        if op is ast.Eq:
            return False
        if op is ast.Lt:
            return value is None or value >= 2
        if op is ast.LtE:
            return value is None or value >= 1
        # i > c / i >= c keeps the threads above c: many only when c is a known small constant
        return value is not None and value <= 1

    def reach(self, test: ast.expr, positive: bool) -> Reach:
        """How many of the threads that get here pass ``test`` (``positive``) or fail it."""
        if self.reaches_many(test, positive):
            return Reach.MANY
        if self.may_select_one(test, positive):
            return Reach.ONE
        return Reach.SOME

    def may_select_one(self, test: ast.expr, positive: bool, _seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``test`` (``positive``) may let only one thread through: an equality on something
        thread-dependent (`i == k`, `ids[i] == target`), a comparison of a thread index (`i >= n - 1`), a
        claim through an atomic (`wp.atomic_add(flag, 0, 1) == 0`). Conservative: True when unsure."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.may_select_one(test.operand, not positive, _seen)
        if isinstance(test, ast.BoolOp):
            parts = [self.may_select_one(v, positive, _seen) for v in test.values]
            if isinstance(test.op, ast.And) == positive:
                return any(parts)  # `a and b` holds, or `a or b` fails: every part restricts
            return all(parts)
        if any(self._atomic_call(n) for n in walk(test)):
            return True
        if isinstance(test, ast.Compare):
            equal = (ast.Eq, ast.Is) if positive else (ast.NotEq, ast.IsNot)
            if any(isinstance(op, equal) for op in test.ops):
                return True
            if len(test.ops) > 1:
                return True
            # a comparison of a thread index (`i >= n - 1`) may keep one thread
            return any(self._mentions_tid(side) for side in (test.left, *test.comparators))
        if isinstance(test, ast.Name) and test.id in self.locals:
            if test.id in _seen:
                return True
            values = [a.value for a in self.assignments if test.id in a.names]
            return any(v is None or self.may_select_one(v, positive, _seen | {test.id}) for v in values)
        return False

    def _mentions_tid(self, node: ast.AST) -> bool:
        """A thread index in ``node`` outside the indices of a load (`i + 1`, not `ids[i]`)."""
        if isinstance(node, ast.Name):
            return node.id in self.types.tid_vars
        if isinstance(node, ast.Subscript):
            return self._mentions_tid(node.value)
        return any(self._mentions_tid(child) for child in child_nodes(node))

    def _atomic_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.model.imports.warp_name(node.func)
        return name is not None and name.startswith("atomic_")

    def _fold(self, node: ast.expr) -> float | None:
        value = fold(node, self.model.constants.values, self.model.imports)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        return None


def loop_exits(body: list[ast.stmt]) -> bool:
    """A `break` / `continue` of this loop (not of a nested one) anywhere in ``body``."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break | ast.Continue):
            return True
        if isinstance(node, ast.For | ast.While):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        # `break`/`continue` are statements: only what holds statements can hold one
        stack.extend(c for c in child_nodes(node) if isinstance(c, _HOLDS_STATEMENTS))
    return False


_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)
