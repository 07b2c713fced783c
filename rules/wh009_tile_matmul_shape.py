"""## WH009 tile-matmul-shape

`wp.tile_matmul(A, B, C)` (or `C = wp.tile_matmul(A, B)`) on tiles whose shapes do not form a
matrix product: `A` must be M x K, `B` K x N and `C` M x N. Also reported: a 1-D tile passed to
`tile_matmul`, and tiles of integer elements (Warp multiplies float16, bfloat16, float32 and
float64 tiles only). Shapes come from the tiles' creation (`tile_load`, `tile_zeros`, ... with
shapes folded from literals and module constants) and follow `tile_matmul`, `tile_transpose`,
`tile_broadcast`, `tile_map` and element-wise tile arithmetic; a tile of unknown shape is never
reported.

### Why it matters
Warp refuses the module at code generation with `ValueError: tile_matmul(A, B, C) requires sizes
of A, B and C to be consistent for a matmul`, naming neither the operand nor the dimension (a
1-D operand gives only `tuple index out of range`), after the import and usually a long build.

### Bad
```python
TILE_M = wp.constant(32)
TILE_K = wp.constant(64)
TILE_N = wp.constant(16)

@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, 0))
    b = wp.tile_load(B, shape=(TILE_N, TILE_K), offset=(0, j * TILE_N))  # K x N swapped
    c = wp.tile_matmul(a, b)
    wp.tile_store(C, c, offset=(i * TILE_M, j * TILE_N))
```

### Good
```python
@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, 0))
    b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(0, j * TILE_N))
    c = wp.tile_matmul(a, b)
    wp.tile_store(C, c, offset=(i * TILE_M, j * TILE_N))
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.tiles import KnownTile, TileShapes, call_arg, shape_text, warp_call_name
from warp_harness.model.types import Scalar
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_MATMUL_FLOATS = ("float16", "bfloat16", "float32", "float64")

# --- the rule -----------------------------------------------------------------------------------------


class TileMatmulShape(Rule):
    id = "WH009"
    name = "tile-matmul-shape"
    summary = "tile_matmul operands whose shapes do not form a matrix product"
    severity = Severity.ERROR
    # above WH004, whose overload check also rejects integer tiles, with a vaguer message
    priority = 72

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        calls = [
            n for n in body_index(kernel.node).of(ast.Call) if warp_call_name(ctx.model, n) == "tile_matmul"
        ]
        if not calls:
            return
        types = ctx.types(kernel)
        shapes = TileShapes(ctx.model, kernel, types)
        for call in calls:
            assert isinstance(call, ast.Call)
            record = self._check_call(ctx, kernel, shapes, call)
            if record is not None:
                yield record

    def _related(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        shapes: TileShapes,
        operands: list[tuple[str, ast.expr | None, KnownTile | None]],
    ) -> list[Related]:
        related: list[Related] = []
        for label, node, tile in operands:
            if isinstance(node, ast.Name) and tile is not None and node.id in shapes.definitions:
                stmt = shapes.definitions[node.id]
                related.append(
                    Related(
                        ctx.location(stmt, kernel.name),
                        f"{label} (`{node.id}`) is created here with shape {tile.shape}",
                    )
                )
        return related

    def _check_call(
        self, ctx: RuleContext, kernel: KernelDef, shapes: TileShapes, call: ast.Call
    ) -> Record | None:
        if any(isinstance(a, ast.Starred) for a in call.args):
            return None
        a_node, b_node, c_node = call_arg(call, "a", 0), call_arg(call, "b", 1), call_arg(call, "out", 2)
        a, b = shapes.of(a_node), shapes.of(b_node)
        c = shapes.of(c_node) if c_node is not None else None
        operands = [("A", a_node, a), ("B", b_node, b), ("C", c_node, c)]
        named = {label: (node, tile) for label, node, tile in operands}

        def text(label: str) -> str:
            node = named[label][0]
            return f"`{ctx.source_of(node)}`" if node is not None else label

        # 1-D (or 3-D...) operands
        for label, node, tile in operands:
            if tile is not None and len(tile.shape) != 2:
                return self.report(
                    ctx,
                    call,
                    f"tile_matmul needs 2-D tiles; {label} ({text(label)}) "
                    f"is a {len(tile.shape)}-D tile of shape "
                    f"{tile.shape}",
                    kernel=kernel.name,
                    expected="a 2-D tile",
                    actual=f"shape {tile.shape}",
                    hint=f"create {label} with a 2-D shape, e.g. `shape=({tile.shape[0]}, 1)`"
                    if len(tile.shape) == 1
                    else f"reshape {label} to 2-D with `wp.tile_reshape`",
                    related=self._related(ctx, kernel, shapes, [(label, node, tile)]),
                )
        # element types Warp's matmul does not take
        for label, node, tile in operands:
            if tile is not None and isinstance(tile.dtype, Scalar) and tile.dtype.name not in _MATMUL_FLOATS:
                return self.report(
                    ctx,
                    call,
                    f"tile_matmul multiplies float16, bfloat16, float32 or float64 tiles; "
                    f"{label} ({text(label)}) "
                    f"holds {tile.dtype}",
                    kernel=kernel.name,
                    expected="float16, bfloat16, float32 or float64",
                    actual=str(tile.dtype),
                    hint="convert it first, e.g. "
                    f"`wp.tile_astype({ctx.source_of(node) if node else label}, "
                    f"dtype=float)`",
                )
        if a is None or b is None:
            return None
        m, k = a.shape
        k2, n = b.shape
        problems: list[str] = []
        expected: dict[str, tuple[int, int]] = {}
        transposed = False
        if k != k2:
            problems.append(f"A has {k} columns but B has {k2} rows")
            transposed = n == k
            if transposed:
                n = k2
            expected["B"] = (k, n)
        if c is not None:
            if c.shape[0] != m:
                problems.append(f"C has {c.shape[0]} rows but A has {m}")
            if c.shape[1] != n:
                problems.append(f"C has {c.shape[1]} columns but B has {n}")
            if c.shape != (m, n):
                expected["C"] = (m, n)
        if not problems:
            return None
        form = "tile_matmul(A, B, C)" if c_node is not None else "C = tile_matmul(A, B)"
        sizes = f"A is {shape_text(a.shape)}, B is {shape_text(b.shape)}"
        if c is not None:
            sizes += f", C is {shape_text(c.shape)}"
        hints: list[str] = []
        if "B" in expected:
            hints.append(
                f"A ({text('A')}) is M x K = {m}x{k}, so B ({text('B')}) must be K x N = "
                f"{shape_text(expected['B'])}"
            )
            if transposed:
                hints.append("B looks transposed: swap its extents or pass `wp.tile_transpose(...)` of it")
        if "C" in expected:
            hints.append(f"A x B is {m}x{n}, so C ({text('C')}) must be {m}x{n}")
        hint = "; ".join(hints)
        actual = {"A": a.shape, "B": b.shape, **({"C": c.shape} if c is not None else {})}
        return self.report(
            ctx,
            call,
            f"{form}: shapes are not consistent for a matmul ({sizes}: {'; '.join(problems)}); "
            f"Warp refuses it: "
            f'"tile_matmul(A, B, C) requires sizes of A, B and C to be consistent for a matmul"',
            kernel=kernel.name,
            expected={label: list(shape) for label, shape in expected.items()},
            actual={label: list(shape) for label, shape in actual.items()},
            hint=hint,
            related=self._related(ctx, kernel, shapes, operands),
        )
