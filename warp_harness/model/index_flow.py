"""Index flow: which integer indices of a kernel are loaded from memory (data-dependent), and what says
that two threads may load the same one.

A thread index (``i = wp.tid()``), a constant, a parameter and arithmetic on them are not data-dependent.
An index read from an array is: ``b = values[i]``, ``j = edges[i, 1]``, ``k = int(x[i] * scale)``.
Such an index may be shared by several threads, or be a permutation (``j = perm[i]``, a sorted or unique
mapping); the analysis tells them apart only by the evidence in the code, as an `Origin`:

- `Origin.GATHERED`: loaded from an index array (``j = perm[i]``, ``b = values[i]``, ``adj[k]`` in a
  loop). Nothing says that two threads load the same value: a permutation or an ownership map (each
  shape has one body, each dof one actuator) is as likely as a histogram key.
- `Origin.CONNECTIVITY`: a fixed column of a connectivity row: ``edges[i, 1]``, ``tets[i][2]``,
  ``e = edge_verts[i]`` then ``e[0]`` / ``e.x``, a flattened row ``spring_indices[i * 2 + 1]``.
  Elements of a mesh share their vertices: spring and finite-element assembly scatter into shared
  nodes.
- `Origin.BINNED`: a loaded float rounded to an integer: ``int(x[i] * scale)``, ``wp.floor(p[i] / h)``: a
  binning, where many values fall in one bin. Integer arithmetic on a loaded key (``key // FAMILIES``,
  ``key % n``) is not a binning: real code decodes packed keys that way, and the key keeps its origin.

An index that combines a loaded value with the thread's own index (``offsets[w] + i``, ``(bi, u_i)``) or
with a loop counter (``start + k`` for ``k in range(count)``: the thread's own segment) is the thread's
own: `Origin.NONE`.

Calls to ``@wp.func``s and to builtins keep the strongest origin of their arguments (a helper that bins
is seen only through its arguments: ``bin_of(x[i])`` is `GATHERED`); an atomic's return value is not
data-dependent (``slot = wp.atomic_add(count, 0, 1)`` hands every thread its own slot).
"""

from __future__ import annotations

import ast
from enum import IntEnum

from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Array, Scalar, Vector
from warp_harness.model.uniformity import Uniformity, names_stored


class Origin(IntEnum):
    """Where an index comes from, weakest evidence of sharing first."""

    NONE = 0  # not loaded from memory
    GATHERED = 1  # loaded from an index array: may be a permutation
    CONNECTIVITY = 2  # a fixed column of a connectivity row: shared between elements
    BINNED = 3  # a many-to-one function of loaded values


# conversions and roundings that turn a loaded float into a bin index
_ROUNDINGS = frozenset({"floor", "ceil", "round", "rint", "trunc"})
_CONVERSIONS = frozenset({"int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}


class IndexFlow:
    """The `Origin` of every local of a kernel and of any index expression."""

    def __init__(self, kernel: KernelDef, types: KernelTypes, uniformity: Uniformity) -> None:
        self.kernel = kernel
        self.types = types
        self.u = uniformity
        self.imports = uniformity.model.imports
        self.params = {p.name for p in kernel.params}
        self._assigned: list[tuple[list[str], ast.expr]] = []  # names, the value assigned to them
        self._collect(kernel.node.body)
        # a greatest fixed point: a local assigned several times has the weakest origin of its values
        # (the analysis does not follow the order of statements, so it keeps to what holds for all)
        names = {n for assigned, _ in self._assigned for n in assigned}
        self.origins: dict[str, Origin] = dict.fromkeys(names, Origin.BINNED)
        # id(expression) -> (the expression, its origin) under the current `origins`: a binary operation
        # asks for its operands' origins twice (`own`, then `origin`), so without it nested arithmetic costs
        # twice as much per level. Emptied whenever `origins` changes; the last round's is the final one.
        self._memo: dict[int, tuple[ast.expr, Origin]] = {}
        changed = True
        while changed:
            changed = False
            self._memo.clear()
            weakest: dict[str, Origin] = {}
            for assigned, value in self._assigned:
                origin = self.origin(value)
                for name in assigned:
                    weakest[name] = min(weakest.get(name, Origin.BINNED), origin)
            for name, origin in weakest.items():
                if origin < self.origins[name]:
                    self.origins[name] = origin
                    changed = True

    def _collect(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    names = names_stored(target)
                    if names:
                        self._assigned.append((names, stmt.value))
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self._assigned.append((names_stored(stmt.target), stmt.value))
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                combined = ast.BinOp(ast.Name(stmt.target.id, ast.Load()), stmt.op, stmt.value)
                self._assigned.append(([stmt.target.id], combined))
            elif isinstance(stmt, ast.For):
                if not self._is_range(stmt.iter):  # a loop counter is the thread's own position
                    self._assigned.append((names_stored(stmt.target), stmt.iter))
                self._collect(stmt.body)
                self._collect(stmt.orelse)
            elif isinstance(stmt, ast.While | ast.If):
                self._collect(stmt.body)
                self._collect(stmt.orelse)
            elif isinstance(stmt, ast.With):
                self._collect(stmt.body)

    def origin(self, node: ast.expr) -> Origin:
        """The origin of ``node``'s value."""
        if isinstance(node, ast.Name):
            return self.origins.get(node.id, Origin.NONE)
        if isinstance(node, ast.Constant):
            return Origin.NONE
        found = self._memo.get(id(node))
        if found is not None and found[0] is node:
            return found[1]
        origin = self._origin(node)
        self._memo[id(node)] = (node, origin)  # the node is held: its id is not reused while it is here
        return origin

    def _origin(self, node: ast.expr) -> Origin:
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Attribute):
            base = self.origin(node.value)
            if base and node.attr in _COMPONENTS and isinstance(self.types.of(node.value), Vector):
                return max(base, Origin.CONNECTIVITY)  # e = edges[i]; e.x
            return base
        if isinstance(node, ast.BinOp):
            if self.own(node.left) or self.own(node.right):
                return Origin.NONE  # offsets[w] + i: the thread's own element
            left, right = self.origin(node.left), self.origin(node.right)
            if left and right:
                # the weaker of two loaded values: start + count[j, 0] is an offset computed from data,
                # (cz * ny + cy) * nx + cx a cell of three binned coordinates
                return min(left, right)
            return max(left, right)
        if isinstance(node, ast.UnaryOp):
            return self.origin(node.operand)
        if isinstance(node, ast.IfExp):
            return max(self.origin(node.body), self.origin(node.orelse))
        if isinstance(node, ast.Tuple | ast.List):
            return max((self.origin(e) for e in node.elts), default=Origin.NONE)
        if isinstance(node, ast.Call):
            return self._call(node)
        return Origin.NONE

    def own(self, node: ast.expr) -> bool:
        """Thread-dependent but not loaded from memory: a thread index, a loop counter, arithmetic on them."""
        return not self.u.uniform(node) and self.origin(node) is Origin.NONE

    def _is_range(self, node: ast.expr) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.imports.warp_name(node.func)
        return name == "range" or (isinstance(node.func, ast.Name) and node.func.id == "range")

    def _subscript(self, node: ast.Subscript) -> Origin:
        base_type = self.types.of(node.value)
        indices = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        inner = max((self.origin(i) for i in indices), default=Origin.NONE)
        root, every = _flatten(node)
        root_type = self.types.of(root)
        if root is not node.value and isinstance(root_type, Array) and root_type.ndim >= 2:
            # edges[i][1]: a row, then a column of it
            if len(every) == root_type.ndim and self._row_and_column(every):
                return max(inner, Origin.CONNECTIVITY)
        if self._is_array(node.value, base_type):
            # a load: a fixed column of a row the thread picks is connectivity (edges[i, 1])
            ndim = base_type.ndim if isinstance(base_type, Array) else len(indices)
            if ndim >= 2 and len(indices) == ndim and self._row_and_column(indices):
                return max(inner, Origin.CONNECTIVITY)
            if len(indices) == 1 and self._strided_column(indices[0]):
                return max(inner, Origin.CONNECTIVITY)
            return max(inner, Origin.GATHERED)
        base = self.origin(node.value)
        if base and isinstance(base_type, Vector) and all(isinstance(i, ast.Constant) for i in indices):
            return max(base, inner, Origin.CONNECTIVITY)  # e = edges[i]; e[0] / edges[i][1]
        return max(base, inner)

    def _is_array(self, node: ast.expr, base_type: object) -> bool:
        if isinstance(base_type, Array):
            return True
        if isinstance(node, ast.Name) and node.id in self.params:
            param = self.kernel.param(node.id)
            return param is not None and isinstance(param.type, Array)
        return False

    def _row_and_column(self, indices: list[ast.expr]) -> bool:
        """Some index the thread chooses and a constant one: ``edges[i, 1]``."""
        constant = any(isinstance(i, ast.Constant) and isinstance(i.value, int) for i in indices)
        varying = any(not self.u.uniform(i) for i in indices)
        return constant and varying

    def _strided_column(self, node: ast.expr) -> bool:
        """``tid * 2 + 1``: a fixed column of a flattened row (warp.sim's ``spring_indices[tid * 2 + 1]``)."""
        product = node
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            column = node.right
            if not (isinstance(column, ast.Constant) and isinstance(column.value, int)):
                return False
            product = node.left
        if not isinstance(product, ast.BinOp) or not isinstance(product.op, ast.Mult):
            return False
        for row, stride in ((product.left, product.right), (product.right, product.left)):
            if (
                isinstance(stride, ast.Constant)
                and isinstance(stride.value, int)
                and stride.value >= 2
                and self.own(row)
            ):
                return True
        return False

    def _call(self, node: ast.Call) -> Origin:
        name = self.imports.warp_name(node.func) or self.imports.math_name(node.func)
        if name is None and isinstance(node.func, ast.Name) and node.func.id in ("int", "round"):
            name = node.func.id
        if name is not None and name.startswith("atomic_"):
            return Origin.NONE  # the old value an atomic returns: every thread gets its own
        args = [*node.args, *(k.value for k in node.keywords)]
        inner = max((self.origin(a) for a in args), default=Origin.NONE)
        if not inner or name is None:
            return inner
        if name in _ROUNDINGS:
            return Origin.BINNED
        if name in _CONVERSIONS and node.args:
            arg_type = self.types.of(node.args[0])
            if isinstance(arg_type, Scalar) and arg_type.is_float:
                return Origin.BINNED  # int(x[i] * scale)
        return inner


def _flatten(node: ast.Subscript) -> tuple[ast.expr, list[ast.expr]]:
    """``edges[i][1]`` -> (``edges``, [``i``, ``1``])."""
    indices: list[ast.expr] = []
    current: ast.expr = node
    while isinstance(current, ast.Subscript):
        part = list(current.slice.elts) if isinstance(current.slice, ast.Tuple) else [current.slice]
        indices = part + indices
        current = current.value
    return current, indices


__all__ = ["IndexFlow", "Origin"]
