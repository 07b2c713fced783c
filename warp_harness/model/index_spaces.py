"""Index spaces: which entity an integer index of a kernel counts (a joint of one world, a joint of all
worlds, a contact, a particle ...), told from how the index is computed and which arrays it indexes.

Warp programs keep one array per attribute of an entity (``joint_type``, ``joint_child``,
``joint_qd_start``); the arrays of one entity share the first word of their names (their *family*,
`family`), and every array of a family is indexed by the same space of ids. An index changes space
when it is computed:

- a **flat index** ``per_world * world + local`` (`FlatIndex`) of a multi-dimensional launch numbers
  the entities of all worlds, while the thread index ``local`` alone numbers one world's;
- an index **loaded from an index array** (``p = contact_particle[tid]``) is in the space the array
  maps to, while the index it was loaded with (``tid``) stays in the array's own space (`IndexLoad`);
- an **offset** loaded from an address array (``flex_vertadr[f]``) moves a local index into the
  global space; adding it a second time leaves every space (`additive_terms`).

The rules built on it judge only what the code shows: a space is never guessed from a name alone; the
family of an array is only compared with the family of another array the same index reaches.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from warp_harness.kernel_judgements import judged
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import body_index, full_body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Array, Scalar
from warp_harness.model.walk import walk

if TYPE_CHECKING:
    from warp_harness.model.module import ModuleModel

# vector constructors whose components an index vector is built from (``wp.vec2i(a, b)``)
_INT_VECTORS = frozenset({"vec2i", "vec3i", "vec4i", "vector"})
_ATOMICS = frozenset(
    {
        "atomic_add",
        "atomic_sub",
        "atomic_min",
        "atomic_max",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
        "atomic_exch",
    }
)
# how deep `additive_terms` follows locals into their values (chains longer than this are not followed)
_MAX_DEPTH = 8


def family(array: str) -> str:
    """The entity an array's name is about: its first word (``joint`` for ``joint_qd_start``)."""
    return array.split("_", 1)[0]


@dataclass(frozen=True)
class Indexing:
    """One access of a kernel array parameter: ``node`` is the subscript or the atomic call."""

    node: ast.expr
    array: str
    indices: tuple[ast.expr, ...]

    @property
    def single(self) -> ast.expr | None:
        """The index of a one-index access."""
        return self.indices[0] if len(self.indices) == 1 else None


@dataclass(frozen=True)
class FlatIndex:
    """``stride * world + local`` with ``world`` and ``local`` two different thread indices."""

    node: ast.expr
    world: str
    local: str
    stride: ast.expr


@dataclass(frozen=True)
class IndexLoad:
    """``name = array[index]``: an index loaded from a 1-D integer array with a named index."""

    stmt: ast.Assign
    name: str
    array: str
    index: str


class IndexSpaces:
    """The accesses, flat indices, index loads and additive terms of one kernel's indices."""

    def __init__(self, kernel: KernelDef, types: KernelTypes, imports: ImportMap) -> None:
        self.kernel = kernel
        self.types = types
        self.imports = imports
        self.arrays: dict[str, Array] = {p.name: p.type for p in kernel.params if isinstance(p.type, Array)}
        self.tid_vars = dict(types.tid_vars)
        self._values: dict[str, list[ast.expr | None]] = {}
        index = body_index(kernel.node)
        # every name read anywhere, a branch Warp may drop included: a name read only there is still used
        self.loaded: set[str] = {
            n.id for n in full_body_index(kernel.node).of(ast.Name) if isinstance(n.ctx, ast.Load)
        }
        self.assigns: list[ast.Assign] = index.of(ast.Assign)
        for stmt in self.assigns:
            for target in stmt.targets:
                self._bind(target, stmt.value)
        for aug in index.of(ast.AugAssign):
            self._bind(aug.target, None)
        for ann in index.of(ast.AnnAssign):
            self._bind(ann.target, ann.value)
        for kind in (ast.For, ast.comprehension, ast.NamedExpr, ast.With):
            for node in index.of(kind):
                for bound in _targets(node):
                    self._bind(bound, None)
        arrays = self.arrays
        self.indexings: list[Indexing] = [
            Indexing(node, node.value.id, tuple(_indices(node)))
            for node in index.of(ast.Subscript)
            if isinstance(node.value, ast.Name) and node.value.id in arrays
        ]
        warp_name = self.imports.warp_name
        for call in index.of(ast.Call):
            args = call.args
            if (
                len(args) >= 3
                and isinstance(args[0], ast.Name)
                and args[0].id in arrays
                and warp_name(call.func) in _ATOMICS
            ):
                self.indexings.append(Indexing(call, args[0].id, tuple(args[1:-1])))

    def _bind(self, target: ast.AST, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            self._values.setdefault(target.id, []).append(value)
        else:
            for n in walk(target):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    self._values.setdefault(n.id, []).append(None)

    def value_of(self, name: str) -> ast.expr | None:
        """The value of a local bound exactly once, by a plain assignment (a parameter, a thread index, a
        loop counter or a local bound twice has none)."""
        values = self._values.get(name)
        if values is None or len(values) != 1 or name in self.tid_vars:
            return None
        return values[0]

    def assigned(self, name: str) -> bool:
        return name in self._values

    # flat indices ---------------------------------------------------------------------------------
    def flat_index(self, node: ast.expr) -> FlatIndex | None:
        """``node`` (or the value of the local it names) as ``stride * world + local``."""
        expr = node
        if isinstance(node, ast.Name):
            value = self.value_of(node.id)
            if value is None:
                return None
            expr = value
        if not isinstance(expr, ast.BinOp) or not isinstance(expr.op, ast.Add):
            return None
        for product, local in ((expr.left, expr.right), (expr.right, expr.left)):
            if not isinstance(local, ast.Name) or local.id not in self.tid_vars:
                continue
            if not isinstance(product, ast.BinOp) or not isinstance(product.op, ast.Mult):
                continue
            for world, stride in ((product.left, product.right), (product.right, product.left)):
                if (
                    isinstance(world, ast.Name)
                    and world.id in self.tid_vars
                    and world.id != local.id
                    and not _mentions(stride, set(self.tid_vars))
                ):
                    return FlatIndex(expr, world.id, local.id, stride)
        return None

    # index loads ----------------------------------------------------------------------------------
    def index_loads(self) -> Iterator[IndexLoad]:
        """``name = array[index]`` from a 1-D integer array parameter, ``index`` a name."""
        for stmt in self.assigns:
            if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
                continue
            value = stmt.value
            if not (
                isinstance(value, ast.Subscript)
                and isinstance(value.value, ast.Name)
                and isinstance(value.slice, ast.Name)
            ):
                continue
            array = self.arrays.get(value.value.id)
            if array is None or array.ndim != 1 or not _is_int(array):
                continue
            yield IndexLoad(stmt, stmt.targets[0].id, value.value.id, value.slice.id)

    # additive terms -------------------------------------------------------------------------------
    def additive_terms(self, node: ast.expr) -> Counter[str]:
        """The array loads ``node`` adds up, with their signs counted (``adr[f] + v[i]`` where ``v`` was
        built as ``adr[f] + e`` holds ``adr[f]`` twice). Locals bound once are followed into their values,
        a component of an index vector into what every component adds."""
        return self._terms(node, 0)

    def _terms(self, node: ast.expr, depth: int) -> Counter[str]:
        if depth > _MAX_DEPTH:
            return Counter()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            left = self._terms(node.left, depth + 1)
            right = self._terms(node.right, depth + 1)
            if isinstance(node.op, ast.Sub):
                left.subtract(right)
                return Counter({k: v for k, v in left.items() if v})
            return left + right
        if isinstance(node, ast.Name):
            value = self.value_of(node.id)
            return self._terms(value, depth + 1) if value is not None else Counter()
        if isinstance(node, ast.Subscript):
            base = node.value
            if isinstance(base, ast.Name) and base.id in self.arrays:
                array = self.arrays[base.id]
                return Counter({ast.dump(node): 1}) if _is_int(array) else Counter()
            if isinstance(base, ast.Name):
                # a component of a local index vector: what every component adds
                value = self.value_of(base.id)
                if isinstance(value, ast.Call) and self._vector(value):
                    return self._common([self._terms(a, depth + 1) for a in value.args])
            return Counter()
        return Counter()

    def _vector(self, call: ast.Call) -> bool:
        name = self.imports.warp_name(call.func)
        return name in _INT_VECTORS and len(call.args) >= 2 and not call.keywords

    @staticmethod
    def _common(parts: list[Counter[str]]) -> Counter[str]:
        if not parts:
            return Counter()
        common = parts[0]
        for part in parts[1:]:
            common = common & part
        return common


def _indices(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _targets(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.For | ast.comprehension | ast.NamedExpr):
        return [node.target]
    if isinstance(node, ast.With):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def _mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in walk(node))


def _is_int(array: Array) -> bool:
    dtype = array.dtype
    return isinstance(dtype, Scalar) and dtype.is_int


def index_spaces(model: ModuleModel, kernel: KernelDef, types: KernelTypes) -> IndexSpaces:
    """``kernel``'s `IndexSpaces`, built once while ``model`` lives (the index-space rules share it)."""
    return judged(model, kernel, ("index-spaces",), lambda: IndexSpaces(kernel, types, model.imports))


__all__ = ["FlatIndex", "IndexLoad", "IndexSpaces", "Indexing", "family", "index_spaces"]
