"""## WH001 missing-annotation

A parameter of a `@wp.kernel` or `@wp.func` has no type annotation.

### Why it matters
Warp generates C++ from the annotations; without one it cannot type the argument and refuses
the whole module at import time with `Incomplete argument annotations on function k`, a message
that names no line.

### Bad
```python
@wp.kernel
def scale(x: wp.array(dtype=float), s):
    i = wp.tid()
    x[i] = x[i] * s
```

### Good
```python
@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s
```
"""

from __future__ import annotations

from collections.abc import Iterator

from warp_harness.model.kernel import KernelDef
from warp_harness.record import Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


class MissingAnnotation(Rule):
    id = "WH001"
    name = "missing-annotation"
    summary = "kernel or function parameter without a type annotation"
    severity = Severity.ERROR
    priority = 90

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        for param in kernel.params:
            if param.annotation is None:
                yield self.report(
                    ctx,
                    param.node,
                    f"parameter `{param.name}` of {kernel.kind} `{kernel.name}` has no type annotation",
                    kernel=kernel.name,
                    expected="an annotation such as `wp.array(dtype=float)` or `float`",
                    actual="none",
                    hint=f"annotate `{param.name}`, e.g. `{param.name}: wp.array(dtype=float)` "
                    f"for an array or `{param.name}: float` for a scalar",
                )
