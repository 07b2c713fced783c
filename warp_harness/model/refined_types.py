"""Expression types of a kernel corrected for what the model's inference does not follow: module
constants whose Warp type is not what their Python value gives (``wp.constant(wp.float64(2.0))``),
and struct names defined twice. Everywhere else they are the model's inference.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import TYPE_CHECKING

from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes, ReturnTypes, binop_result
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import (
    BOOL,
    SCALAR_ALIASES,
    UNKNOWN,
    Scalar,
    Struct,
    UnknownType,
    WarpType,
    named_warp_type,
    python_value_type,
)
from warp_harness.model.walk import walk

if TYPE_CHECKING:
    from warp_harness.model.module import ModuleModel

_SCALAR_CTORS = set(SCALAR_ALIASES) - {"float", "int", "bool", "half"}
# builtins whose type the inference reads from the call's text (constants, tile shapes), not from types
_AST_READ = frozenset(
    {"vector", "matrix", "identity", "tile_zeros", "tile_ones", "tile_full", "tile_empty", "tile_load"}
)


def known(t: WarpType) -> bool:
    return not isinstance(t, UnknownType)


def bound_names(target: ast.expr) -> list[str]:
    """Names an assignment target rebinds (``x``, ``a, b``), not those it indexes (``a`` in ``a[i] = v``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in bound_names(element)]
    if isinstance(target, ast.Starred):
        return bound_names(target.value)
    return []


class ModuleTypeFacts:
    """What one file says about types beyond the model: module constants whose Warp type is not what
    a Python literal would give (``wp.constant(wp.float64(2.0))``), and struct names defined twice."""

    def __init__(self, model: ModuleModel) -> None:
        self.model = model
        self.constants: dict[str, WarpType] = {}
        for name in model.constants.values:
            real = self._constant_type(name, 0)
            if real != self._plain_type(name):
                self.constants[name] = real
        # the model keeps one definition of a struct name; aliases taken before a redefinition mean the other
        counts: dict[str, int] = {}
        for node in model.index.of(ast.ClassDef):
            if node.decorator_list:
                counts[node.name] = counts.get(node.name, 0) + 1
        self.redefined = {name for name, count in counts.items() if count > 1}

    def _plain_type(self, name: str) -> WarpType:
        return python_value_type(self.model.constants.values.get(name))

    def _constant_type(self, name: str, depth: int) -> WarpType:
        stmt = self.model.constants.definitions.get(name)
        if stmt is None or stmt.value is None or depth > 20:
            return UNKNOWN
        value = stmt.value
        imports = self.model.imports
        if (
            isinstance(value, ast.Call)
            and imports.warp_name(value.func) == "constant"
            and len(value.args) == 1
        ):
            value = value.args[0]
        if isinstance(value, ast.Call):
            ctor = imports.warp_name(value.func)
            if ctor in _SCALAR_CTORS:
                return Scalar(SCALAR_ALIASES[ctor])
            if isinstance(value.func, ast.Name) and value.func.id in ("int", "float") and not value.keywords:
                return self._plain_type(name)
            return UNKNOWN
        for n in walk(value):
            if isinstance(n, ast.Call):
                return UNKNOWN
            if isinstance(n, ast.Name) and self._constant_type(n.id, depth + 1) != self._plain_type(n.id):
                return UNKNOWN
        return self._plain_type(name)


def _plain_call(node: ast.Call) -> bool:
    return not any(isinstance(a, ast.Starred) for a in node.args) and all(kw.arg for kw in node.keywords)


class RefinedTypes:
    """Expression types for one kernel: the model's inference, distrusted where it rests on the
    facts above (a typed module constant, a redefined struct)."""

    def __init__(
        self,
        kernel: KernelDef,
        types: KernelTypes,
        facts: ModuleTypeFacts,
        builtins: ReturnTypes | None = None,
    ) -> None:
        self.types = types
        # with the builtin table, a builtin call over corrected arguments gets its type recomputed
        self.builtins = builtins
        self.imports = facts.model.imports
        self._kernel = kernel
        # most files have neither typed constants nor redefined structs: then nothing below looks at the body
        self.constants: dict[str, WarpType] = {}
        if facts.constants:
            names = {n.id for n in body_index(kernel.node).of(ast.Name)}
            self.constants = {k: v for k, v in facts.constants.items() if k not in self.local and k in names}
        self.redefined: set[str] = set()
        if facts.redefined:
            self.redefined = {
                t.name
                for t in types.variables.values()
                if isinstance(t, Struct) and t.name in facts.redefined
            }
        self._memo: dict[int, WarpType] = {}
        # locals computed from such constants or structs: their inferred types cannot be trusted
        self.tainted: set[str] = set()
        self.suspicious = bool(self.constants or self.redefined)
        # what each tainted local is assigned (its type is recomputed from these); None: unknowable
        self._assigned: dict[str, list[ast.expr | WarpType | None]] = {}
        self._var_types: dict[str, WarpType] = {}
        self._busy: set[str] = set()
        if self.suspicious:
            self._taint(kernel)
            for param in kernel.params:
                self._assigned[param.name] = [param.type]
            for node in body_index(kernel.node).nodes:
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        self._assign(target, node.value)
                elif isinstance(node, ast.AnnAssign | ast.For | ast.NamedExpr | ast.With):
                    targets: list[ast.expr | None] = (
                        [i.optional_vars for i in node.items] if isinstance(node, ast.With) else [node.target]
                    )
                    for bound in targets:
                        if bound is not None:
                            self._assign(bound, None)

    @cached_property
    def local(self) -> set[str]:
        """The kernel's locals and parameters (a module constant of the same name is not seen there)."""
        return set(self.types.variables) | {p.name for p in self._kernel.params}

    def _assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self._assigned.setdefault(target.id, []).append(value)
            return
        for name in bound_names(target):
            self._assigned.setdefault(name, []).append(None)

    def _tainted_type(self, name: str) -> WarpType:
        """A tainted local's type, recomputed from everything assigned to it (UNKNOWN unless all agree)."""
        if name in self._var_types:
            return self._var_types[name]
        if name in self._busy:
            return UNKNOWN
        self._busy.add(name)
        found: list[WarpType] = []
        for value in self._assigned.get(name, [None]):
            if value is None:
                found.append(UNKNOWN)
            elif isinstance(value, ast.expr):
                found.append(self.of(value))
            else:
                found.append(value)
        self._busy.discard(name)
        result = found[0] if found and known(found[0]) and all(t == found[0] for t in found) else UNKNOWN
        self._var_types[name] = result
        return result

    def _mentions_tainted(self, node: ast.AST) -> bool:
        for n in walk(node):
            if self.redefined and isinstance(n, ast.Attribute):
                base = self.types.of(n.value)
                if isinstance(base, Struct) and base.name in self.redefined:
                    return True
            if isinstance(n, ast.Name) and (
                n.id in self.tainted or (n.id in self.constants and n.id not in self.local)
            ):
                return True
        return False

    def _taint(self, kernel: KernelDef) -> None:
        changed = True
        rounds = 0
        while changed and rounds < 20:
            changed = False
            rounds += 1
            for node in body_index(kernel.node).nodes:
                targets: list[ast.expr] = []
                value: ast.expr | None = None
                if isinstance(node, ast.Assign):
                    targets, value = list(node.targets), node.value
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets, value = [node.target], node.value
                elif isinstance(node, ast.For):
                    targets, value = [node.target], node.iter
                if value is None or not self._mentions_tainted(value):
                    continue
                for target in targets:
                    for name in bound_names(target):
                        if name not in self.tainted:
                            self.tainted.add(name)
                            changed = True

    def of(self, node: ast.expr) -> WarpType:
        if not self.suspicious:
            return self.types.of(node)  # nothing to correct: the model's inference
        key = id(node)
        if key not in self._memo:
            self._memo[key] = self._of(node)
        return self._memo[key]

    def _of(self, node: ast.expr) -> WarpType:
        if isinstance(node, ast.Name):
            if node.id in self.tainted:
                return self._tainted_type(node.id)
            if node.id in self.constants and node.id not in self.local:
                return self.constants[node.id]
            return self.types.of(node)
        if isinstance(node, ast.BinOp):
            return binop_result(node.op, self.of(node.left), self.of(node.right))
        if isinstance(node, ast.UnaryOp):
            return BOOL if isinstance(node.op, ast.Not) else self.of(node.operand)
        if isinstance(node, ast.IfExp):
            body, orelse = self.of(node.body), self.of(node.orelse)
            return body if body == orelse else UNKNOWN
        if isinstance(node, ast.Call) and self._mentions_tainted(node):
            return self._call(node)
        if self.suspicious and self._mentions_tainted(node):
            return UNKNOWN
        return self.types.of(node)

    def _call(self, node: ast.Call) -> WarpType:
        """A call over corrected arguments: a Warp type's constructor keeps its type; a builtin's result
        is recomputed from the table; anything else is unknown."""
        name = self.imports.warp_name(node.func)
        if name is None:
            return UNKNOWN
        if named_warp_type(name) is not UNKNOWN:
            return self.types.of(node)  # `wp.float16(x)` is a float16 whatever x is
        if self.builtins is None or not _plain_call(node) or name in _AST_READ:
            return UNKNOWN
        args = [self.of(a) for a in node.args]
        kwargs = {kw.arg: self.of(kw.value) for kw in node.keywords if kw.arg}
        return self.builtins.return_type(name, args, kwargs)
