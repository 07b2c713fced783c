"""Kernel parameter annotations, in every spelling Warp accepts, to static types."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from warp_harness.model.constants import Value, fold
from warp_harness.model.imports import ImportMap
from warp_harness.model.types import (
    UNKNOWN,
    Array,
    Matrix,
    Scalar,
    Struct,
    Tile,
    Vector,
    WarpType,
    named_warp_type,
)

_ARRAY_KINDS = {
    "array": ("array", 1),
    "array1d": ("array", 1),
    "array2d": ("array", 2),
    "array3d": ("array", 3),
    "array4d": ("array", 4),
    "indexedarray": ("indexedarray", 1),
    "indexedarray1d": ("indexedarray", 1),
    "indexedarray2d": ("indexedarray", 2),
    "indexedarray3d": ("indexedarray", 3),
    "indexedarray4d": ("indexedarray", 4),
    "fabricarray": ("fabricarray", 1),
    "fabricarrayarray": ("fabricarrayarray", 1),
    "indexedfabricarray": ("indexedfabricarray", 1),
    "indexedfabricarrayarray": ("indexedfabricarrayarray", 1),
}


# the array types annotations spell, shared: a large module's parameters repeat a few (newton's steel solver:
# 2,400 equal arrays, as many equal scalars, alive through its check)
_ARRAYS: dict[tuple[WarpType, int, str], Array] = {}
_ARRAYS_MAX = 4096  # the types a workspace spells: bounded all the same (a long-lived server)


def _array(dtype: WarpType, ndim: int, kind: str) -> Array:
    key = (dtype, ndim, kind)
    found = _ARRAYS.get(key)
    if found is None:
        found = Array(dtype, ndim, kind)
        if len(_ARRAYS) < _ARRAYS_MAX:
            _ARRAYS[key] = found
    return found


class AnnotationResolver:
    """Resolves annotation / dtype expressions in one module."""

    def __init__(
        self,
        imports: ImportMap,
        structs: set[str],
        aliases: Mapping[str, WarpType],
        constants: Mapping[str, Value],
    ) -> None:
        self.imports = imports
        self.structs = structs
        self.aliases = aliases
        self.constants = constants

    def resolve(self, node: ast.expr | None) -> WarpType:
        if node is None:
            return UNKNOWN
        try:
            return self._resolve(node)
        except (ValueError, TypeError):
            return UNKNOWN

    def _resolve(self, node: ast.expr) -> WarpType:
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            if node.id in self.structs:
                return Struct(node.id)
            warp = self.imports.warp_name(node)
            if warp is not None:
                return self._named(warp)
            if node.id in ("float", "int", "bool"):
                return named_warp_type(node.id)  # shared, as Warp's own names are
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            warp = self.imports.warp_name(node)
            if warp is not None:
                return self._named(warp)
            # struct from another module: mod.MyStruct -> unknown struct, not an error
            return UNKNOWN
        if isinstance(node, ast.Subscript):
            # wp.array2d[float], wp.array[wp.vec3]
            name = self.imports.warp_name(node.value)
            if name in _ARRAY_KINDS:
                kind, ndim = _ARRAY_KINDS[name]
                index = node.slice
                if isinstance(index, ast.Tuple):
                    # Warp 1.19 also spells ranks as `wp.array[float, Literal[2]]` (or `wp.array[float, 2]`)
                    if len(index.elts) != 2:
                        return UNKNOWN
                    rank = index.elts[1]
                    if isinstance(rank, ast.Subscript):
                        rank = rank.slice
                    declared = self._int(rank)
                    if declared is None:
                        return UNKNOWN
                    return _array(self._resolve(index.elts[0]), declared, kind)
                return _array(self._resolve(index), ndim, kind)
            return UNKNOWN
        if isinstance(node, ast.Call):
            return self._call(node)
        return UNKNOWN

    def _named(self, name: str) -> WarpType:
        if name in _ARRAY_KINDS:
            kind, ndim = _ARRAY_KINDS[name]
            return _array(UNKNOWN, ndim, kind)
        return named_warp_type(name)

    def _kw(self, node: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
        for kw in node.keywords:
            if kw.arg == name:
                return kw.value
        if position is not None and len(node.args) > position:
            return node.args[position]
        return None

    def _int(self, node: ast.expr | None) -> int | None:
        if node is None:
            return None
        value = fold(node, self.constants, self.imports)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def _call(self, node: ast.Call) -> WarpType:
        name = self.imports.warp_name(node.func)
        if name is None:
            return UNKNOWN
        if name in _ARRAY_KINDS:
            kind, ndim = _ARRAY_KINDS[name]
            dtype = self.resolve(self._kw(node, "dtype"))
            declared = self._int(self._kw(node, "ndim"))
            if name in ("array", "indexedarray") and self._kw(node, "ndim") is not None:
                if declared is None:
                    return UNKNOWN
                ndim = declared
            return _array(dtype, ndim, kind)
        if name in ("vector", "vec"):
            length = self._int(self._kw(node, "length", 0))
            dtype = self.resolve(self._kw(node, "dtype", 1))
            if length is not None and isinstance(dtype, Scalar):
                return Vector(length, dtype)
            return UNKNOWN
        if name in ("matrix", "mat"):
            shape = fold(self._kw(node, "shape", 0) or ast.Constant(None), self.constants, self.imports)
            dtype = self.resolve(self._kw(node, "dtype", 1))
            if (
                isinstance(shape, tuple)
                and len(shape) == 2
                and all(isinstance(s, int) for s in shape)
                and isinstance(dtype, Scalar)
            ):
                rows, cols = shape
                assert isinstance(rows, int) and isinstance(cols, int)
                return Matrix(rows, cols, dtype)
            return UNKNOWN
        if name in ("tile", "Tile"):
            return Tile(self.resolve(self._kw(node, "dtype", 0)))
        return UNKNOWN
