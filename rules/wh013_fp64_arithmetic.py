"""## WH013 fp64-arithmetic

A kernel or function computes in float64 (double precision) while the target GPU runs float64 at
a small fraction of its float32 rate: 1/64 on sm_86 and sm_89 (GeForce and workstation Ampere
and Ada). Reported once per kernel or function, at its first float64 operation, with the number
of float64 operations in its body: arithmetic, comparisons excluded, and calls of math builtins
(`wp.sqrt`, `wp.sin`, `wp.dot`, ...) on float64 scalars, vectors or matrices. Loads, stores
and conversions are not counted. Nothing is reported for targets with a fast float64 path
(sm_80, sm_90: 1/2 rate) or for the CPU.

### Why it matters
A float64 kernel that is fast on an A100 or H100 can be 30 times slower on an RTX card, and the
mix is easy to get by accident (a `wp.float64` constant, an array of `wp.float64` read into an
accumulation). This is information: the code is correct, only its speed depends on the target.

### Bad
```python
@wp.kernel
def scale(x: wp.array(dtype=wp.float64), s: wp.float64):
    i = wp.tid()
    x[i] = wp.sqrt(x[i] * s)
```

### Good
```python
@wp.kernel
def scale(x: wp.array(dtype=wp.float32), s: wp.float32):
    i = wp.tid()
    x[i] = wp.sqrt(x[i] * s)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import FLOAT64, UNKNOWN, Scalar, WarpType, named_warp_type, scalar_of
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

# below this float64 / float32 throughput ratio, float64 arithmetic is worth a note
LOW_FP64_RATIO = 1 / 8
_PY_MATH = {"min", "max", "abs", "pow", "round"}
# builtins that move data rather than compute
_NOT_ARITHMETIC = {
    "tid",
    "static",
    "constant",
    "select",
    "where",
    "array_store",
    "address",
    "load",
    "store",
    "len",
    "print",
    "printf",
    "expect_eq",
    "expect_neq",
    "expect_near",
    "copy",
    "assign",
    "view",
    "extract",
    "index",
    "indexref",
    "tile_load",
    "tile_store",
    "tile_zeros",
    "tile_ones",
    "tile_full",
    "tile_empty",
    "tile",
    "untile",
    "vector",
    "matrix",
    "quaternion",
    "transformation",
}


def _is_fp64(t: WarpType) -> bool:
    scalar = scalar_of(t)
    # by name: `== FLOAT64` (a dataclass comparison) was ~1,000 calls a kernel file
    return type(scalar) is Scalar and scalar.name == FLOAT64.name


# the only nodes `_is_fp64_op` can accept
_OPERATIONS = (ast.BinOp, ast.UnaryOp, ast.AugAssign, ast.Call)


class Fp64Arithmetic(Rule):
    id = "WH013"
    name = "fp64-arithmetic"
    summary = "float64 arithmetic on a target with a low float64 rate"
    severity = Severity.INFO
    priority = 20

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.STRUCTS})

    def applies(self, ctx: RuleContext) -> bool:
        return ctx.profile.is_cuda and ctx.profile.fp64_ratio < LOW_FP64_RATIO

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        profile = ctx.profile
        ratio = profile.fp64_ratio
        rate = f"1/{round(1 / ratio)}" if ratio > 0 else "a fraction"
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        types = ctx.types(kernel)
        candidates = body_index(kernel.node).of_any(*_OPERATIONS)
        ops = [n for n in candidates if self._is_fp64_op(ctx, types, n)]
        if not ops:
            return
        ops.sort(key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        first = ops[0]
        count = len(ops)
        what = "operation" if count == 1 else "operations"
        yield self.report(
            ctx,
            first,
            f"{kernel.kind} `{kernel.name}` computes in float64 ({count} {what}, the first here); "
            f"{profile.name} runs float64 at {rate} of its float32 rate",
            kernel=kernel.name,
            expected="float32 arithmetic",
            actual=f"{count} float64 {what}",
            hint="use float32 (`float`, `wp.vec3`, arrays of `float`) where double precision is "
            "not needed, "
            "or keep float64 only for the accumulation that needs it; sm_80 and sm_90 run float64 "
            "at 1/2 rate",
        )

    def _is_fp64_op(self, ctx: RuleContext, types: KernelTypes, node: ast.AST) -> bool:
        if isinstance(node, ast.BinOp):
            return _is_fp64(types.of(node.left)) or _is_fp64(types.of(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return _is_fp64(types.of(node.operand))
        if isinstance(node, ast.AugAssign):
            return _is_fp64(types.of(node.value)) or _is_fp64(types.of(node.target))
        if isinstance(node, ast.Call):
            args = [*node.args, *(kw.value for kw in node.keywords)]
            if not any(_is_fp64(types.of(a)) for a in args):
                return False  # asked first: most calls take no float64, and naming the callee costs more
            imports = ctx.imports
            name = imports.warp_name(node.func) or imports.math_name(node.func)
            if (
                name is None
                and isinstance(node.func, ast.Name)
                and node.func.id in _PY_MATH
                and node.func.id not in types.variables
            ):
                name = node.func.id
            if (
                name is None
                or name in _NOT_ARITHMETIC
                or name.startswith("tile_")
                or named_warp_type(name) is not UNKNOWN
            ):
                return (
                    False  # data movement and conversions (wp.float64(x), wp.vec3d(...)) are not arithmetic
                )
            return ctx.builtins.has_builtin(name)
        return False
