"""## WH043 string-parameter

A `@wp.kernel` parameter is annotated `str`.

### Why it matters
Warp has no string type for kernel arguments. The kernel builds, but every launch fails:
`RuntimeError: Error launching kernel, unable to pack kernel parameter type <class 'str'> for param
bc, expected <class 'str'>` (measured with Warp 1.19; NVIDIA/warp#84). Pass a mode as an integer
(a `wp.constant` per choice), or pick the kernel on the host (`wp.static` or one kernel per mode).

### Bad
```python
@wp.kernel
def apply_bc(u: wp.array(dtype=float), bc: str):
    i = wp.tid()
    if i == 0:
        u[i] = 0.0


wp.launch(apply_bc, dim=4, inputs=[u, "dirichlet"])
```

### Good
```python
@wp.kernel
def apply_bc(u: wp.array(dtype=float), bc: int):
    i = wp.tid()
    if i == 0 and bc == 0:
        u[i] = 0.0


wp.launch(apply_bc, dim=4, inputs=[u, 0])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.kernel import KernelDef
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


class StringParameter(Rule):
    id = "WH043"
    name = "string-parameter"
    summary = "a kernel parameter annotated `str`: every launch fails to pack it"
    severity = Severity.ERROR
    priority = 80

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel:
            return
        for param in kernel.params:
            annotation = param.annotation
            if not (isinstance(annotation, ast.Name) and annotation.id == "str"):
                continue
            yield self.report(
                ctx,
                annotation,
                f"parameter `{param.name}` of kernel `{kernel.name}` is a `str`; Warp cannot pass it: "
                f"\"Error launching kernel, unable to pack kernel parameter type <class 'str'> for param "
                f'{param.name}"',
                kernel=kernel.name,
                expected="a numeric parameter (an `int` code per choice)",
                actual="str",
                hint=f"pass `{param.name}` as an `int` (one `wp.constant` per choice) or choose the "
                "kernel on the host",
            )
