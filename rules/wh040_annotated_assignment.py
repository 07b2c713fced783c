"""## WH040 annotated-assignment

A local variable of a `@wp.kernel` or `@wp.func` is declared with a type annotation
(`c: wp.vec3 = a + b`, or `y: float` alone).

### Why it matters
Warp's code generator has no rule for annotated assignments and refuses the whole module when it
builds it: `WarpCodegenError: Construct `ast.AnnAssign` not supported in kernels.` (measured with
Warp 1.19; NVIDIA/warp#882 asks for the support). Type checkers and editors encourage the
annotation, so it is easy to write while the kernel still looks like ordinary Python.

The fix drops the annotation and keeps the value (`c = a + b`). It is offered, not applied by
`check --fix`: without the annotation Warp types the variable from its value, so `x: float = 0`
becomes an `int`; write the value in the type you meant (`x = float(0)`, `wp.vec3(...)`).

### Bad
```python
@wp.func
def vec_add(a: wp.vec3, b: wp.vec3) -> wp.vec3:
    c: wp.vec3 = a + b
    return c


@wp.kernel
def add_all(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = vec_add(a[i], b[i])
```

### Good
```python
@wp.func
def vec_add(a: wp.vec3, b: wp.vec3) -> wp.vec3:
    c = a + b
    return c


@wp.kernel
def add_all(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = vec_add(a[i], b[i])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

WARP_MESSAGE = "Construct `ast.AnnAssign` not supported in kernels."


class AnnotatedAssignment(Rule):
    id = "WH040"
    name = "annotated-assignment"
    summary = "a type-annotated local variable in a kernel or function: Warp refuses `ast.AnnAssign`"
    severity = Severity.ERROR
    priority = 85
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        for stmt in body_index(kernel.node).of(ast.AnnAssign):
            target = ctx.source_of(stmt.target)
            annotation = ctx.source_of(stmt.annotation)
            fix = None
            if stmt.value is not None:
                fix = Fix(
                    f"Drop the annotation: `{target} = {ctx.source_of(stmt.value)}`",
                    (ctx.replace(stmt, f"{target} = {ctx.source_of(stmt.value)}"),),
                    safe=False,
                )
            yield self.report(
                ctx,
                stmt,
                f"`{target}: {annotation}` annotates a local variable of {kernel.kind} `{kernel.name}`; "
                f'Warp refuses the module: "{WARP_MESSAGE}"',
                kernel=kernel.name,
                expected="a plain assignment (`name = value`)",
                actual="an annotated assignment",
                hint=f"drop the annotation and give the value the type you mean, e.g. `{target} = "
                f"{annotation}(...)`",
                fix=fix,
            )
