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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from warp_harness.model.constants import Value, fold
from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import UNKNOWN, Scalar, Tile, WarpType
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Rule, RuleContext

# --- tile helpers shared by WH009, WH014 and WH015 ------------------------------------------------

# creators: name -> position of the `shape` argument
TILE_CREATORS = {"tile_load": 1, "tile_zeros": 0, "tile_ones": 0, "tile_empty": 0, "tile_full": 0}
_MATMUL_FLOATS = ("float16", "bfloat16", "float32", "float64")


def call_arg(call: ast.Call, name: str, position: int | None) -> ast.expr | None:
    """The argument bound to parameter ``name`` (keyword, else the positional one)."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    if position is not None and position < len(call.args):
        arg = call.args[position]
        return None if isinstance(arg, ast.Starred) else arg
    return None


def warp_call_name(ctx: RuleContext, node: ast.AST) -> str | None:
    """``tile_load`` for a call of ``wp.tile_load`` (whatever the import alias)."""
    if not isinstance(node, ast.Call):
        return None
    return ctx.model.imports.warp_name(node.func)


def kernel_env(
    ctx: RuleContext, types: KernelTypes, constants: Mapping[str, Value] | None = None
) -> dict[str, Value]:
    """Module constants a kernel's shapes fold against (names the kernel rebinds are left out)."""
    values = ctx.model.constants.values if constants is None else constants
    local = set(types.variables) | {p.name for p in types.kernel.params}
    return {k: v for k, v in values.items() if k not in local}


def fold_shape(node: ast.expr | None, env: Mapping[str, Value], ctx: RuleContext) -> tuple[int, ...] | None:
    """A tile shape folded to ints: ``(TILE_M, TILE_K)`` or a scalar ``TILE``; None if unknown."""
    if node is None:
        return None
    value = fold(node, env, ctx.model.imports)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if (
        isinstance(value, tuple)
        and value
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        return tuple(int(v) for v in value)  # type: ignore[arg-type]
    return None


def source_text(ctx: RuleContext, node: ast.AST) -> str:
    """The source of ``node`` (``ctx.source_of`` re-splits the whole file on every call)."""
    first: int | None = getattr(node, "lineno", None)
    last: int | None = getattr(node, "end_lineno", None)
    col: int | None = getattr(node, "col_offset", None)
    end_col: int | None = getattr(node, "end_col_offset", None)
    lines: list[str] = ctx.model.lines
    if first is None or last is None or col is None or end_col is None or not 0 < first <= last <= len(lines):
        return ctx.source_of(node)
    text = lines[first - 1 : last]
    if all(line.isascii() for line in text):  # byte columns are character columns
        if first == last:
            return text[0][col:end_col]
        return text[0][col:] + "".join(text[1:-1]) + text[-1][:end_col]
    chunk = [line.encode("utf-8") for line in text]
    chunk[-1] = chunk[-1][:end_col]
    chunk[0] = chunk[0][col:]
    return b"".join(chunk).decode("utf-8", errors="replace")


def shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in shape)


@dataclass(frozen=True)
class KnownTile:
    """A tile whose every extent is known."""

    shape: tuple[int, ...]
    dtype: WarpType


_BUSY = KnownTile((), UNKNOWN)  # a name whose shape is being computed (self-referencing assignment)


class TileShapes:
    """Shapes of the tiles of one kernel, flow-insensitively: a name assigned tiles of two
    different shapes (or anything unknown) has no shape."""

    def __init__(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        constants: Mapping[str, Value] | None = None,
    ) -> None:
        self.ctx = ctx
        self.kernel = kernel
        self.types = types
        self.env = kernel_env(ctx, types, constants)
        self.params = {p.name for p in kernel.params}
        self.assigned: dict[str, list[ast.expr | None]] = {}
        # the assignment statement of a name assigned once (for "defined here" notes)
        self.definitions: dict[str, ast.stmt] = {}
        bindings = (ast.Assign, ast.AnnAssign, ast.For, ast.comprehension, ast.NamedExpr, ast.With)
        for node in body_index(kernel.node).of_any(*bindings):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._collect(target, node.value, node)
            elif isinstance(node, ast.AnnAssign):
                self._collect(node.target, node.value, node)
            elif isinstance(node, ast.For | ast.comprehension):
                self._collect(node.target, None, None)
            elif isinstance(node, ast.NamedExpr):
                self._collect(node.target, node.value, None)
            elif isinstance(node, ast.With):
                for item in node.items:
                    if item.optional_vars is not None:
                        self._collect(item.optional_vars, None, None)
        self._names: dict[str, KnownTile | None] = {}

    def _collect(self, target: ast.expr, value: ast.expr | None, stmt: ast.stmt | None) -> None:
        if isinstance(target, ast.Name):
            self.assigned.setdefault(target.id, []).append(value)
            if stmt is not None and len(self.assigned[target.id]) == 1:
                self.definitions[target.id] = stmt
            else:
                self.definitions.pop(target.id, None)
        elif isinstance(target, ast.Tuple | ast.List | ast.Starred):
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    self.assigned.setdefault(n.id, []).append(None)
                    self.definitions.pop(n.id, None)

    def of(self, node: ast.expr | None) -> KnownTile | None:
        if node is None:
            return None
        try:
            result = self._of(node, 0)
        except RecursionError:
            return None
        return None if result is _BUSY else result

    def _name(self, name: str, depth: int) -> KnownTile | None:
        if name in self._names:
            cached = self._names[name]
            return cached
        if name in self.params or name not in self.assigned:
            return None
        self._names[name] = _BUSY
        results = [self._of(v, depth + 1) if v is not None else None for v in self.assigned[name]]
        known = [r for r in results if r is not _BUSY]
        result: KnownTile | None = None
        if known and all(r is not None for r in known):
            shapes = {r.shape for r in known if r is not None}
            dtypes = {r.dtype for r in known if r is not None}
            if len(shapes) == 1:
                result = KnownTile(next(iter(shapes)), next(iter(dtypes)) if len(dtypes) == 1 else UNKNOWN)
        self._names[name] = result
        return result

    def _of(self, node: ast.expr, depth: int) -> KnownTile | None:
        if depth > 40:
            return None
        if isinstance(node, ast.Name):
            return self._name(node.id, depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            return self._of(node.operand, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
            left, right = self._of(node.left, depth + 1), self._of(node.right, depth + 1)
            if left is not None and right is not None:
                if left is _BUSY:
                    return right
                if right is _BUSY or left.shape == right.shape:
                    return left
                return None
            # tile * scalar keeps the tile's shape; an unknown operand could be a tile of another shape
            if left is not None and isinstance(self.types.of(node.right), Scalar):
                return left
            if right is not None and isinstance(self.types.of(node.left), Scalar):
                return right
            return None
        if not isinstance(node, ast.Call):
            return None
        name = warp_call_name(self.ctx, node)
        if name in TILE_CREATORS:
            shape = fold_shape(call_arg(node, "shape", TILE_CREATORS[name]), self.env, self.ctx)
            if shape is None:
                return None
            inferred = self.types.of(node)
            return KnownTile(shape, inferred.dtype if isinstance(inferred, Tile) else UNKNOWN)
        if name == "tile_matmul" and call_arg(node, "out", 2) is None:
            a = self._of_arg(node, "a", 0, depth)
            b = self._of_arg(node, "b", 1, depth)
            if a is not None and b is not None and len(a.shape) == 2 and len(b.shape) == 2:
                return KnownTile((a.shape[0], b.shape[1]), a.dtype)
            return None
        if name == "tile_transpose":
            t = self._of_arg(node, "a", 0, depth)
            if t is not None and len(t.shape) == 2:
                return KnownTile((t.shape[1], t.shape[0]), t.dtype)
            return None
        if name in ("tile_broadcast", "tile_reshape"):
            t = self._of_arg(node, "a", 0, depth)
            shape = fold_shape(call_arg(node, "shape", 1), self.env, self.ctx)
            if shape is None or any(s <= 0 for s in shape):
                return None
            return KnownTile(shape, t.dtype if t is not None else UNKNOWN)
        if name == "tile_astype":
            t = self._of_arg(node, "t", 0, depth)
            dtype_node = call_arg(node, "dtype", 1)
            if t is None:
                return None
            return KnownTile(t.shape, self.ctx.model.resolver.resolve(dtype_node) if dtype_node else UNKNOWN)
        if name == "tile_map" and len(node.args) >= 2:
            t = self._of(node.args[1], depth + 1)
            return KnownTile(t.shape, UNKNOWN) if t is not None and t is not _BUSY else None
        if name in ("tile_sum", "tile_max", "tile_min") and call_arg(node, "axis", 1) is None:
            t = self._of_arg(node, "a", 0, depth)
            return KnownTile((1,), t.dtype) if t is not None else None
        return None

    def _of_arg(self, call: ast.Call, name: str, position: int, depth: int) -> KnownTile | None:
        arg = call_arg(call, name, position)
        if arg is None:
            return None
        result = self._of(arg, depth + 1)
        return None if result is _BUSY else result


# --- the rule -----------------------------------------------------------------------------------------


class TileMatmulShape(Rule):
    id = "WH009"
    name = "tile-matmul-shape"
    summary = "tile_matmul operands whose shapes do not form a matrix product"
    severity = Severity.ERROR
    # above WH004, whose overload check also rejects integer tiles, with a vaguer message
    priority = 72

    def check(self, ctx: RuleContext) -> Iterator[Record]:
        for kernel in ctx.model.kernels:
            if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
                continue
            calls = [
                n for n in body_index(kernel.node).of(ast.Call) if warp_call_name(ctx, n) == "tile_matmul"
            ]
            if not calls:
                continue
            types = ctx.model.types(kernel)
            shapes = TileShapes(ctx, kernel, types)
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
            return f"`{source_text(ctx, node)}`" if node is not None else label

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
                    f"`wp.tile_astype({source_text(ctx, node) if node else label}, "
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
