"""## WH060 decomposition-output-element

The output form of `wp.svd3`, `wp.svd2`, `wp.qr3` or `wp.eig3` is given an array element as one of
its outputs: `wp.svd3(a[tid], U[tid], sigma[tid], V[tid])`.

### Why it matters
These builtins write their results through their output arguments, but an array element in an
argument is read into a temporary first, and the builtin writes into that temporary: the array
keeps its old values (zeros from `wp.zeros`, a plausible decomposition of a zero matrix). Warp
compiles it without a word (measured with Warp 1.19 on the CPU; NVIDIA/warp#1735). Decompose into
locals and store them, or use the returning form `U, sigma, V = wp.svd3(a[tid])`.

A warning: nothing fails, the outputs only never arrive.

### Bad
```python
@wp.kernel
def decompose(a: wp.array(dtype=wp.mat33), U: wp.array(dtype=wp.mat33), sigma: wp.array(dtype=wp.vec3),
              V: wp.array(dtype=wp.mat33)):
    tid = wp.tid()
    wp.svd3(a[tid], U[tid], sigma[tid], V[tid])
```

### Good
```python
@wp.kernel
def decompose(a: wp.array(dtype=wp.mat33), U: wp.array(dtype=wp.mat33), sigma: wp.array(dtype=wp.vec3),
              V: wp.array(dtype=wp.mat33)):
    tid = wp.tid()
    u = wp.mat33()
    s = wp.vec3()
    v = wp.mat33()
    wp.svd3(a[tid], u, s, v)
    U[tid] = u
    sigma[tid] = s
    V[tid] = v
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Array
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

# builtin -> argument count of its output form (the matrix first, then the outputs)
OUTPUT_FORMS = {"svd3": 4, "svd2": 4, "qr3": 3, "eig3": 3}


class DecompositionOutputElement(Rule):
    id = "WH060"
    name = "decomposition-output-element"
    summary = "an array element passed as an output of svd3/svd2/qr3/eig3: the result never reaches the array"
    severity = Severity.WARNING
    priority = 45

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
        if not arrays:
            return
        imports = ctx.imports
        for call in body_index(kernel.node).of(ast.Call):
            name = imports.warp_name(call.func)
            if name not in OUTPUT_FORMS or call.keywords or len(call.args) != OUTPUT_FORMS[name]:
                continue
            for arg in call.args[1:]:
                if not (isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name)):
                    continue
                if arg.value.id not in arrays:
                    continue
                element = ctx.source_of(arg)
                yield self.report(
                    ctx,
                    arg,
                    f"`wp.{name}` writes its output into a temporary copy of `{element}`: the array "
                    f"`{arg.value.id}` never receives it",
                    kernel=kernel.name,
                    expected="a local variable as the output, stored into the array afterwards",
                    actual=f"the array element `{element}`",
                    hint=f"decompose into a local (`out = ...` then `wp.{name}(..., out, ...)`) and store "
                    f"`{element} = out`, or use the returning form of `wp.{name}`",
                )
