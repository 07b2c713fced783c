"""## WH042 host-array-call

A kernel or function calls one of Warp's host-side array constructors (`wp.zeros_like`,
`wp.ones_like`, `wp.empty_like`, `wp.full_like`, `wp.clone`, `wp.empty`, `wp.ones`, `wp.full`).
These allocate device arrays from Python; none is a kernel builtin. (WH004 reports the other
host-side functions: `wp.launch`, `wp.synchronize`, `wp.from_numpy`, ...)

### Why it matters
Warp refuses the module when it builds it: `Could not find function wp.zeros_like as a built-in or
user-defined function` (measured with Warp 1.19 for each name above; NVIDIA/warp#61). In a kernel a
zero vector is its type's constructor, `wp.vec3(0.0)` or `type(v)(0.0)`; a local scratch array is
`wp.zeros(shape=..., dtype=...)`, which Warp does accept inside kernels.

### Bad
```python
@wp.kernel
def forces(pos: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    force = wp.zeros_like(pos[i])
    out[i] = force + pos[i]
```

### Good
```python
@wp.kernel
def forces(pos: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    force = wp.vec3(0.0)
    out[i] = force + pos[i]
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

# measured: Warp 1.19 raises "Could not find function wp.<name>" for each inside a kernel
HOST_ARRAY_FUNCTIONS = frozenset(
    {"zeros_like", "ones_like", "empty_like", "full_like", "clone", "empty", "ones", "full"}
)


class HostArrayCall(Rule):
    id = "WH042"
    name = "host-array-call"
    summary = "a host-side array constructor (`wp.zeros_like`, `wp.empty`...) called in a kernel or function"
    severity = Severity.ERROR
    priority = 85

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        imports = ctx.imports
        for call in body_index(kernel.node).of(ast.Call):
            name = imports.warp_name(call.func)
            if name not in HOST_ARRAY_FUNCTIONS or ctx.builtins.callable_in_kernels(name):
                continue
            spelled = ctx.source_of(call.func)
            yield self.report(
                ctx,
                call.func,
                f"`{spelled}` is a host-side array constructor; Warp refuses it in {kernel.kind} "
                f'`{kernel.name}`: "Could not find function {spelled} as a built-in or user-defined '
                'function"',
                kernel=kernel.name,
                expected="a type constructor (`wp.vec3(0.0)`) or a kernel builtin",
                actual=spelled,
                hint="build the value with its type (`wp.vec3(0.0)`, `type(v)(0.0)`), or allocate the array "
                "on the host and pass it in",
            )
