"""## WH041 vector-product

Two vectors are multiplied or divided with `*` or `/` (`a * b`, `a / b`, `a *= b`) in a
kernel or function; or two quaternions are divided.

### Why it matters
Warp has no `*` or `/` between two vectors: the module fails to build with `Couldn't find function
overload for 'mul' that matched inputs with types: [vec3f, vec3f]` (measured with Warp 1.19, for
float and integer vectors of any length, spatial vectors too; NVIDIA/warp#820). The component-wise
product and quotient are the builtins `wp.cw_mul(a, b)` and `wp.cw_div(a, b)`; the dot product is
`wp.dot(a, b)`. Scalars times vectors, matrices times vectors and quaternion products are fine.

The fix writes the component-wise builtin, which is what the operator means elementwise; it is
offered, not applied by `check --fix`, since a dot or cross product may have been meant.

### Bad
```python
@wp.kernel
def scale(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i] = a[i] * b[i]
```

### Good
```python
@wp.kernel
def scale(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    a[i] = wp.cw_mul(a[i], b[i])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Quaternion, Vector, WarpType, warp_type_name
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_OPS: dict[type[ast.operator], tuple[str, str]] = {ast.Mult: ("mul", "cw_mul"), ast.Div: ("div", "cw_div")}


def _warp_name(t: WarpType) -> str:
    if isinstance(t, Vector) and t.length == 6:
        return str(t)  # spatial vectors: Warp prints `vector(length=6, dtype=float32)`
    return warp_type_name(t)


class VectorProduct(Rule):
    id = "WH041"
    name = "vector-product"
    summary = "`*` or `/` between two vectors: Warp has no such overload (`wp.cw_mul`, `wp.cw_div`)"
    severity = Severity.ERROR
    priority = 80
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        index = body_index(kernel.node)
        candidates: list[ast.BinOp | ast.AugAssign] = [
            *(n for n in index.of(ast.BinOp) if type(n.op) in _OPS),
            *(n for n in index.of(ast.AugAssign) if type(n.op) in _OPS),
        ]
        if not candidates:
            return
        types = ctx.types(kernel)
        warp = next((local for local, module in ctx.imports.modules.items() if module == "warp"), "wp")
        for node in sorted(candidates, key=lambda n: (n.lineno, n.col_offset)):
            left_node = node.left if isinstance(node, ast.BinOp) else node.target
            right_node = node.right if isinstance(node, ast.BinOp) else node.value
            left, right = types.of(left_node), types.of(right_node)
            op, builtin = _OPS[type(node.op)]
            vectors = isinstance(left, Vector) and isinstance(right, Vector)
            quaternions = op == "div" and isinstance(left, Quaternion) and isinstance(right, Quaternion)
            if not (vectors or quaternions) or left != right:
                continue
            shown = f"[{_warp_name(left)}, {_warp_name(right)}]"
            fix = None
            if vectors and isinstance(node, ast.BinOp):
                call = f"{warp}.{builtin}({ctx.source_of(node.left)}, {ctx.source_of(node.right)})"
                fix = Fix(f"Write `{call}`", (ctx.replace(node, call),), safe=False)
            yield self.report(
                ctx,
                node,
                f"`{ctx.source_of(node).splitlines()[0]}` applies `{'*' if op == 'mul' else '/'}` to two "
                f"{'vectors' if vectors else 'quaternions'}; Warp has no such operator: \"Couldn't find "
                f"function overload for '{op}' that matched inputs with types: {shown}\"",
                kernel=kernel.name,
                expected=f"`{warp}.{builtin}(a, b)` (component-wise) or `{warp}.dot(a, b)`"
                if vectors
                else "`q * wp.quat_inverse(r)`",
                actual=f"{_warp_name(left)} {'*' if op == 'mul' else '/'} {_warp_name(right)}",
                hint=f"write `{warp}.{builtin}(a, b)` for the component-wise "
                f"{'product' if op == 'mul' else 'quotient'}"
                if vectors
                else "multiply by the inverse: `q * wp.quat_inverse(r)`",
                fix=fix,
            )
