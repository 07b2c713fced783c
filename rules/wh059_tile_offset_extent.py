"""## WH059 tile-offset-extent

A tile's offset along one axis multiplies the tile index by the tile's extent along *another* axis:
`wp.tile_load(a, shape=(TILE_M, TILE_K), offset=(i * TILE_K, k * TILE_K))`. The offset of axis 0
steps in rows, so it must step by the tile's rows, `TILE_M`.

Judged for `tile_load` (the `shape` it is given) and for `tile_store` / `tile_atomic_add` of a tile
bound once by a creator with a literal shape; the offset of each axis may be `index * EXTENT` or
`index * EXTENT + base`. Reported only when a factor of the offset is the extent of another axis,
no factor is the extent of its own axis, and the two extents differ (by value where they fold, by
name otherwise).

### Why it matters
Warp loads whatever the offset names: the tiles overlap or leave gaps, and a partial tile past the end of
the array is padded with zeros, so the kernel computes on the wrong block without a word. With square
tiles the mistake is invisible; it shows when the tile sizes are tuned apart. Measured with Warp 1.19
on the CPU (tests/rules/test_wh059_tile_offset_extent.py: a tiled copy with `TILE_M != TILE_K` leaves
blocks unwritten). Reported as a warning, with the axis's own extent as the fix.

### Bad
```python
TILE_M = wp.constant(4)
TILE_K = wp.constant(2)

@wp.kernel
def copy(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, k = wp.tid()
    t = wp.tile_load(a, shape=(TILE_M, TILE_K), offset=(i * TILE_K, k * TILE_K))
    wp.tile_store(out, t, offset=(i * TILE_M, k * TILE_K))
```

### Good
```python
TILE_M = wp.constant(4)
TILE_K = wp.constant(2)

@wp.kernel
def copy(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, k = wp.tid()
    t = wp.tile_load(a, shape=(TILE_M, TILE_K), offset=(i * TILE_M, k * TILE_K))
    wp.tile_store(out, t, offset=(i * TILE_M, k * TILE_K))
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from warp_harness.model.constants import Value, fold
from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.tiles import TILE_CREATORS, call_arg
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

# calls that place a tile in an array: the position of the tile argument, of the offset
_STORES = {"tile_store": (1, 2), "tile_atomic_add": (1, 2)}


def _factors(node: ast.expr) -> list[ast.expr]:
    """The factors of ``index * EXTENT`` or ``index * EXTENT + base`` (either order)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        for side in (node.left, node.right):
            if isinstance(side, ast.BinOp) and isinstance(side.op, ast.Mult):
                return [side.left, side.right]
        return []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return [node.left, node.right]
    return []


class TileOffsetExtent(Rule):
    id = "WH059"
    name = "tile-offset-extent"
    summary = "a tile offset steps by the tile's extent along another axis"
    severity = Severity.WARNING
    priority = 55
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        imports = ctx.imports
        calls = [
            c
            for c in body_index(kernel.node).of(ast.Call)
            if (imports.warp_name(c.func) or "").startswith("tile_")
        ]
        if not calls:
            return
        local = {p.name for p in kernel.params}
        shapes: dict[str, ast.Tuple | None] = {}  # a tile bound once by a creator with a literal shape
        for stmt in body_index(kernel.node).of(ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    local.add(target.id)
                    created = self._created_shape(ctx, stmt.value)
                    shapes[target.id] = created if target.id not in shapes else None
        env = {k: v for k, v in ctx.constants.values.items() if k not in local}
        for call in calls:
            shape: ast.expr | None
            name = imports.warp_name(call.func)
            if name == "tile_load":
                shape = call_arg(call, "shape", 1)
                offset = call_arg(call, "offset", 2)
            elif name in _STORES:
                tile_at, offset_at = _STORES[name]
                tile = call_arg(call, "t" if name == "tile_store" else "value", tile_at)
                shape = shapes.get(tile.id) if isinstance(tile, ast.Name) else None
                offset = call_arg(call, "offset", offset_at)
            else:
                continue
            if not isinstance(shape, ast.Tuple) or not isinstance(offset, ast.Tuple):
                continue
            if len(shape.elts) < 2 or len(shape.elts) != len(offset.elts):
                continue
            yield from self._judge(ctx, kernel, call, shape, offset, env)

    def _created_shape(self, ctx: RuleContext, value: ast.expr) -> ast.Tuple | None:
        if not isinstance(value, ast.Call):
            return None
        name = ctx.imports.warp_name(value.func)
        if name not in TILE_CREATORS:
            return None
        shape = call_arg(value, "shape", TILE_CREATORS[name])
        return shape if isinstance(shape, ast.Tuple) else None

    def _judge(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        call: ast.Call,
        shape: ast.Tuple,
        offset: ast.Tuple,
        env: Mapping[str, Value],
    ) -> Iterator[Record]:
        def key(node: ast.expr) -> object:
            value = fold(node, env, ctx.imports)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            return ast.dump(node)

        extents = [key(e) for e in shape.elts]
        for axis, component in enumerate(offset.elts):
            factors = _factors(component)
            if not factors:
                continue
            keys = [key(f) for f in factors]
            if extents[axis] in keys:
                continue
            for factor, factor_key in zip(factors, keys, strict=True):
                other = next(
                    (e for e, extent in enumerate(extents) if e != axis and extent == factor_key), None
                )
                if other is None or (isinstance(factor, ast.Constant) and not isinstance(factor_key, int)):
                    continue
                own = ctx.source_of(shape.elts[axis])
                wrong = ctx.source_of(factor)
                yield self.report(
                    ctx,
                    factor,
                    f"the offset of axis {axis} steps by `{wrong}`, the tile's extent along axis {other}; "
                    f"the tile is `{own}` long along axis {axis} (shape `{ctx.source_of(shape)}`), so the "
                    "tiles overlap or leave gaps",
                    kernel=kernel.name,
                    expected=f"`{ctx.source_of(component).replace(wrong, own, 1)}`",
                    actual=ctx.source_of(component),
                    hint=f"step axis {axis} by its own extent `{own}`",
                    fix=Fix(f"Step by `{own}`", (ctx.replace(factor, own),)),
                )
                break
