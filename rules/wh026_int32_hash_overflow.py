"""## WH026 int32-hash-overflow

A hash or random number is computed in int32 with a large multiplier (`i * 73856093 ^ j * 19349663`,
`seed * 1103515245 + 12345`: any product of a non-constant int32 by a constant of at least 2**20), its
remainder `h % n` is taken, and that remainder is then used where a negative value is certainly wrong:

- as a bucket **offset** inside an array index, `table[base + h % n]` or `start[b + 1]` with
  `b = h % n` (an error), or
- converted to a float as a random number, `float(h % 1000) / 1000.0` (a warning: the sample lies in
  (-1, 1) instead of [0, 1)).

### Why it matters
int32 arithmetic wraps in Warp (two's complement; a literal above 2**31 - 1 such as `2654435761` is
truncated to int32 too), so the product is negative for about half of all inputs, and `%` keeps the sign
of its left operand as in C: `h % n` lies in `(-n, n)`. A bare `table[h % n]` still works, because Warp
wraps a negative index like Python (`table[-3]` is `table[n - 3]`, measured with Warp 1.19 in release
and debug mode), so that case is not reported. But `table[obj * n + h % n]` lands in the previous
object's segment of the table (4,000 particles hashed into 4 objects' 16-bucket segments count
`[1251, 1000, 999, 750]` instead of 1000 each), and `start[b]`/`start[b + 1]` with a negative `b` read
the wrong pair of offsets. The bug is silent: no error, no assertion even in debug mode.

Warp's own hash grid folds a negative remainder back (`if (cx < 0) cx += dim_x;` in
`native/hashgrid.h`) and newton hashes in `wp.uint32`; like them, a remainder checked for its sign
(`if b < 0: b += n`), masked (`h & (n - 1)`), taken of `abs(...)` or computed in another type is not
reported. The fix makes the
remainder non-negative: `(h % n + n) % n`.

### Bad
```python
@wp.kernel
def count_cells(x: wp.array(dtype=wp.vec3i), body: wp.array(dtype=int), counts: wp.array(dtype=int), n: int):
    i = wp.tid()
    c = x[i]
    h = (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)
    wp.atomic_add(counts, body[i] * n + h % n, 1)
```

### Good
```python
@wp.kernel
def count_cells(x: wp.array(dtype=wp.vec3i), body: wp.array(dtype=int), counts: wp.array(dtype=int), n: int):
    i = wp.tid()
    c = x[i]
    h = (c[0] * 73856093) ^ (c[1] * 19349663) ^ (c[2] * 83492791)
    wp.atomic_add(counts, body[i] * n + (h % n + n) % n, 1)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.inference import KernelTypes
from warp_harness.model.int_arith import Overflow, may_overflow
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Array
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import kernel_model

_ATOMICS = {
    "atomic_add",
    "atomic_sub",
    "atomic_min",
    "atomic_max",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_cas",
    "atomic_exch",
}
_FLOATS = {"float", "float16", "float32", "float64"}


class Int32HashOverflow(Rule):
    id = "WH026"
    name = "int32-hash-overflow"
    summary = (
        "an int32 hash overflows and its negative remainder is used as an index offset or a random number"
    )
    severity = Severity.ERROR
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.has_python_body:
            return
        model = kernel_model(ctx, kernel)
        if not may_overflow(kernel.node, model.constants.values, model.imports):
            return  # no product by a hashing constant: no remainder may be negative
        types = model.types(kernel)
        overflow: Overflow | None = None
        reported: set[int] = set()
        for node in walk_body(kernel.node):
            indices = self._indices(ctx, types, node)
            floats = self._float_argument(ctx, node)
            if not indices and floats is None:
                continue
            for index in indices:
                if not isinstance(index, ast.BinOp) or not isinstance(index.op, ast.Add | ast.Sub):
                    continue
                if overflow is None:
                    overflow = Overflow(kernel.node, types, model.constants.values, model.imports)
                for operand, other in ((index.left, index.right), (index.right, index.left)):
                    remainder = overflow.negative_remainder(operand)
                    if remainder is None or id(remainder) in reported:
                        continue
                    if isinstance(other, ast.Constant) and other.value == 0:
                        continue
                    reported.add(id(remainder))
                    yield self._offset(ctx, kernel, index, operand, remainder)
            if floats is not None:
                if overflow is None:
                    overflow = Overflow(kernel.node, types, model.constants.values, model.imports)
                remainder = overflow.negative_remainder(floats)
                if remainder is not None and id(remainder) not in reported:
                    reported.add(id(remainder))
                    yield self._random(ctx, kernel, node, floats, remainder)

    def _indices(self, ctx: RuleContext, types: KernelTypes, node: ast.AST) -> list[ast.expr]:
        """The index expressions of an array access or of an atomic operation on an array."""
        if isinstance(node, ast.Subscript) and isinstance(types.of(node.value), Array):
            return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(node, ast.Call) and ctx.imports.warp_name(node.func) in _ATOMICS:
            if len(node.args) >= 3 and isinstance(types.of(node.args[0]), Array):
                return list(node.args[1:-1])
        return []

    def _float_argument(self, ctx: RuleContext, node: ast.AST) -> ast.expr | None:
        if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
            return None
        func = node.func
        name = func.id if isinstance(func, ast.Name) and func.id == "float" else ctx.imports.warp_name(func)
        return node.args[0] if name in _FLOATS else None

    def _fix(self, ctx: RuleContext, remainder: ast.BinOp) -> Fix | None:
        modulus = remainder.right
        if not isinstance(modulus, ast.Name | ast.Constant | ast.Attribute):
            return None
        left, right = ctx.source_of(remainder.left), ctx.source_of(modulus)
        if isinstance(remainder.left, ast.BinOp):
            left = f"({left})"
        text = f"({left} % {right} + {right}) % {right}"
        return Fix(f"Make the remainder non-negative: `{text}`", (ctx.replace(remainder, text),))

    def _offset(
        self, ctx: RuleContext, kernel: KernelDef, index: ast.BinOp, operand: ast.expr, remainder: ast.BinOp
    ) -> Record:
        text = ctx.source_of(remainder)
        named = f"`{ctx.source_of(operand)}` (`{text}`)" if operand is not remainder else f"`{text}`"
        return self.report(
            ctx,
            remainder,
            f"{named} is a remainder of an int32 hash that overflows (a product by a large constant wraps to "
            f"negative values), so it lies in (-n, 0] for about half of the inputs; in the index "
            f"`{ctx.source_of(index)}` a negative offset lands outside its bucket range (Warp wraps only a "
            f"whole negative index, not an offset)",
            kernel=kernel.name,
            expected="a bucket in [0, n)",
            actual="a bucket in (-n, n)",
            hint="make the remainder non-negative (`(h % n + n) % n`) or hash in `wp.uint32`",
            fix=self._fix(ctx, remainder),
        )

    def _random(
        self, ctx: RuleContext, kernel: KernelDef, call: ast.AST, operand: ast.expr, remainder: ast.BinOp
    ) -> Record:
        text = ctx.source_of(remainder)
        return self.report(
            ctx,
            remainder,
            f"`{text}` is a remainder of an int32 hash that overflows, negative for about half of the "
            f"inputs; converted to a float by `{ctx.source_of(call)}` it gives negative random numbers",
            kernel=kernel.name,
            expected=f"{text} in [0, n)",
            actual=f"{text} in (-n, n)",
            hint="make the remainder non-negative (`(h % n + n) % n`) or hash in `wp.uint32`",
            fix=self._fix(ctx, remainder),
            severity=Severity.WARNING,
        )
