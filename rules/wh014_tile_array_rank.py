"""## WH014 tile-array-rank

A tile's shape and the array it is loaded from or stored to have a different number of
dimensions: `wp.tile_load(a, shape=(16, 16))` on a 1-D array, `wp.tile_store(b, t)` of a 2-D tile
into a 1-D array, the same for `wp.tile_atomic_add`, or an `offset` with a different number of
indices than the array has dimensions. The rank of a shape is read from the source (a tuple of
any values, or one integer), the rank of an array from its annotation; an unknown rank is never
reported.

### Why it matters
Warp refuses the module at code generation: `tile_load() array argument must have same number
of dimensions as the tile shape, trying to perform an 2 dimensional load from an array with 1
dimensions`, or `tile_store() 'a' argument must have the same number of dimensions as the 't'
argument`, after the import and the build of everything else.

### Bad
```python
@wp.kernel
def copy(a: wp.array(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(16, 16), offset=(i * 16, 0))
    wp.tile_store(b, t, offset=(i * 16, 0))
```

### Good
```python
@wp.kernel
def copy(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    i = wp.tid()
    t = wp.tile_load(a, shape=(16, 16), offset=(i * 16, 0))
    wp.tile_store(b, t, offset=(i * 16, 0))
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from warp_harness.model.constants import Value, fold
from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.tiles import TileShapes, call_arg, kernel_env, warp_call_name
from warp_harness.model.types import Array, Scalar, Tile, TupleType, UnknownType
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_STORES = ("tile_store", "tile_atomic_add")


def _rank(
    node: ast.expr | None, ctx: RuleContext, types: KernelTypes, env: Mapping[str, Value]
) -> int | None:
    """Number of entries of a shape or offset argument: a tuple literal, one int, or a folded value."""
    if node is None:
        return None
    if isinstance(node, ast.Tuple | ast.List):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return len(node.elts)
    value = fold(node, env, ctx.imports)
    if isinstance(value, tuple):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return 1
    t = types.of(node)
    if isinstance(t, TupleType):
        return len(t.elements)
    if isinstance(t, Scalar) and t.is_int:
        return 1
    return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _indices(n: int) -> str:
    return "1 index" if n == 1 else f"{n} indices"


def _annotated_ndim(annotation: ast.expr | None) -> int | None:
    """Dimensions of a subscripted array annotation with several entries, ``wp.array[float, Literal[2]]``
    (Warp 1.19's spelling), which the model reads as 1-D; -1 for annotations that need no correction."""
    if not isinstance(annotation, ast.Subscript) or not isinstance(annotation.slice, ast.Tuple):
        return -1
    for element in annotation.slice.elts:
        if (
            isinstance(element, ast.Subscript)
            and isinstance(element.slice, ast.Constant)
            and isinstance(element.slice.value, int)
            and not isinstance(element.slice.value, bool)
        ):
            return element.slice.value
    return None


class TileArrayRank(Rule):
    id = "WH014"
    name = "tile-array-rank"
    summary = "tile shape or offset rank differs from the array's number of dimensions"
    severity = Severity.ERROR
    priority = 70

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        calls = [
            n
            for n in body_index(kernel.node).of(ast.Call)
            if warp_call_name(ctx.model, n) in ("tile_load", *_STORES)
        ]
        if not calls:
            return
        types = ctx.types(kernel)
        shapes = TileShapes(ctx.model, kernel, types)
        env = kernel_env(ctx.model, types)
        flagged: set[int] = set()  # tile_load calls already reported: their tiles are not reported again
        for call in calls:
            assert isinstance(call, ast.Call)
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            name = warp_call_name(ctx.model, call)
            if name == "tile_load":
                for record in self._load(ctx, kernel, types, env, call):
                    flagged.add(id(call))
                    yield record
            else:
                assert name is not None
                tile_node = call_arg(call, "t", 1)
                if isinstance(tile_node, ast.Name) and tile_node.id in shapes.definitions:
                    definition = shapes.definitions[tile_node.id]
                    if isinstance(definition, ast.Assign) and id(definition.value) in flagged:
                        continue
                yield from self._store(ctx, kernel, types, shapes, env, call, name)

    def _array(self, types: KernelTypes, node: ast.expr | None) -> Array | None:
        if node is None:
            return None
        t = types.of(node)
        if not isinstance(t, Array) or t.kind != "array":
            return None
        param = types.kernel.param(node.id) if isinstance(node, ast.Name) else None
        if param is not None and types.variables.get(param.name, param.type) == param.type:
            ndim = _annotated_ndim(param.annotation)
            if ndim is None:
                return None
            if ndim >= 0 and ndim != t.ndim:
                return Array(t.dtype, ndim, t.kind)
        elif isinstance(t.dtype, UnknownType):
            return None  # perhaps a `wp.array[dtype, Literal[n]]` the model read as 1-D
        return t

    def _load(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        env: Mapping[str, Value],
        call: ast.Call,
    ) -> Iterator[Record]:
        array_node = call_arg(call, "a", 0)
        array = self._array(types, array_node)
        if array is None or array_node is None:
            return
        arr = ctx.source_of(array_node)
        shape_node = call_arg(call, "shape", 1)
        rank = _rank(shape_node, ctx, types, env)
        if shape_node is not None and rank is not None and rank != array.ndim:
            yield self.report(
                ctx,
                shape_node,
                f"tile_load of a {rank}-D tile (shape `{ctx.source_of(shape_node)}`) from `{arr}`, a "
                f"{array.ndim}-D array; "
                'Warp: "tile_load() array argument must have same number of dimensions '
                f'as the tile shape"',
                kernel=kernel.name,
                expected=array.ndim,
                actual=rank,
                hint=f"give the tile shape {_plural(array.ndim, 'extent')} "
                f"(one per dimension of `{arr}`), or "
                f"declare `{arr}` as a {rank}-D array (e.g. `wp.array{rank}d(dtype=...)`)"
                if rank in (1, 2, 3, 4)
                else f"give the tile shape {_plural(array.ndim, 'extent')}",
            )
            return
        offset_node = call_arg(call, "offset", 2)
        offset_rank = _rank(offset_node, ctx, types, env)
        if offset_node is not None and offset_rank is not None and offset_rank != array.ndim:
            yield self.report(
                ctx,
                offset_node,
                f"tile_load offset `{ctx.source_of(offset_node)}` has {_indices(offset_rank)} for "
                f"`{arr}`, a {array.ndim}-D array; "
                'Warp: "tile_load() offset argument must have the same number '
                f'of dimensions as the array to load from"',
                kernel=kernel.name,
                expected=array.ndim,
                actual=offset_rank,
                hint=f"pass one offset per dimension of `{arr}`: a tuple of {array.ndim}",
            )

    def _store(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        shapes: TileShapes,
        env: Mapping[str, Value],
        call: ast.Call,
        name: str,
    ) -> Iterator[Record]:
        array_node = call_arg(call, "a", 0)
        array = self._array(types, array_node)
        if array is None or array_node is None:
            return
        arr = ctx.source_of(array_node)
        tile_node = call_arg(call, "t", 1)
        tile_rank: int | None = None
        if tile_node is not None:
            inferred = types.of(tile_node)
            if isinstance(inferred, Tile) and inferred.shape is not None:
                tile_rank = len(inferred.shape)
            else:
                known = shapes.of(tile_node)
                tile_rank = len(known.shape) if known is not None else None
        if tile_node is not None and tile_rank is not None and tile_rank != array.ndim:
            yield self.report(
                ctx,
                call,
                f"{name} of a {tile_rank}-D tile (`{ctx.source_of(tile_node)}`) "
                f"into `{arr}`, a {array.ndim}-D "
                f"array; Warp: \"{name}() 'a' argument must have the same number of dimensions as the 't' "
                f'argument"',
                kernel=kernel.name,
                expected=array.ndim,
                actual=tile_rank,
                hint=f"store into a {tile_rank}-D array, or reshape the tile with `wp.tile_reshape` to "
                f"{_plural(array.ndim, 'dimension')}",
            )
            return
        offset_node = call_arg(call, "offset", 2)
        offset_rank = _rank(offset_node, ctx, types, env)
        if offset_node is not None and offset_rank is not None and offset_rank != array.ndim:
            yield self.report(
                ctx,
                offset_node,
                f"{name} offset `{ctx.source_of(offset_node)}` has {_indices(offset_rank)} for `{arr}`, "
                f"a {array.ndim}-D array; Warp: \"{name}() 'a' argument must have {offset_rank} dimensions, "
                f'calculated based on the provided offset arguments"',
                kernel=kernel.name,
                expected=array.ndim,
                actual=offset_rank,
                hint=f"pass one offset per dimension of `{arr}`: a tuple of {array.ndim}",
            )
