"""## WH005 kernel-return-value

A `@wp.kernel` returns a value (`return x`). A kernel's results must be written to its output
arrays; only `@wp.func` functions return values. A bare `return` (an early exit) is fine.

### Why it matters
Warp refuses the module with `WarpCodegenTypeError: Warp kernels cannot return values`; a value
computed this way never reaches the host.

### Bad
```python
@wp.kernel
def norm(x: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    return wp.length(x[i])
```

### Good
```python
@wp.kernel
def norm(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[i])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Rule, RuleContext, Scope, walk_body


class KernelReturnValue(Rule):
    id = "WH005"
    name = "kernel-return-value"
    summary = "a kernel returns a value"
    severity = Severity.ERROR
    priority = 80
    fixable = True

    scope = Scope.KERNEL

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel:
            return
        for node in walk_body(kernel.node):
            if (
                isinstance(node, ast.Return)
                and node.value is not None
                and not (isinstance(node.value, ast.Constant) and node.value.value is None)
            ):
                value = ctx.source_of(node.value)
                yield self.report(
                    ctx,
                    node,
                    f"kernel `{kernel.name}` returns a value (`{value}`); kernels cannot return values",
                    kernel=kernel.name,
                    expected="a bare `return` or none",
                    actual=f"return {value}",
                    hint="write the value to an output array parameter, e.g. `out[i] = ...`, "
                    "or make this a `@wp.func` called from a kernel",
                    fix=Fix(
                        "Replace with a bare `return` (the value is discarded)",
                        (ctx.replace(node, "return"),),
                        safe=False,
                    ),
                )
