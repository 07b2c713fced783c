"""## WH046 atomic-result-stored-back

The value an atomic returns is stored back into the element the atomic just updated:
`x[tid] = wp.atomic_min(x, tid, hi)`, `count[0] = wp.atomic_add(count, 0, 1)`.

### Why it matters
`wp.atomic_add`, `atomic_sub`, `atomic_min`, `atomic_max`, `atomic_and`, `atomic_or`, `atomic_xor` and
`atomic_exch` update the element in place and return its **old** value. Storing that value back
undoes the update: a clamp through `atomic_min`/`atomic_max` leaves the element unclamped, a counter
never moves. Warp compiles it without a word and the result is wrong on every device (measured
with Warp 1.19 on the CPU: `x[tid] = wp.atomic_min(x, tid, 9.0)` leaves 50.0 in `x`;
OmniLRS/OmniLRS#136, which relied on a Warp bug fixed in NVIDIA/warp@4f07ad0 that made
`atomic_min`/`atomic_max` return the new value).

The fix keeps the atomic and drops the store (`wp.atomic_min(x, tid, hi)`).

### Bad
```python
@wp.kernel
def clamp(x: wp.array(dtype=float), hi: float):
    tid = wp.tid()
    x[tid] = wp.atomic_min(x, tid, hi)
```

### Good
```python
@wp.kernel
def clamp(x: wp.array(dtype=float), hi: float):
    tid = wp.tid()
    wp.atomic_min(x, tid, hi)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

ATOMICS_RETURNING_OLD = frozenset(
    {
        "atomic_add",
        "atomic_sub",
        "atomic_min",
        "atomic_max",
        "atomic_and",
        "atomic_or",
        "atomic_xor",
        "atomic_exch",
    }
)


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _indices(target: ast.Subscript) -> list[ast.expr]:
    index = target.slice
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


class AtomicResultStoredBack(Rule):
    id = "WH046"
    name = "atomic-result-stored-back"
    summary = "an atomic's returned old value stored back into the element it updated: the update is undone"
    severity = Severity.ERROR
    priority = 75
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        imports = ctx.imports
        for stmt in body_index(kernel.node).of(ast.Assign):
            call = stmt.value
            if len(stmt.targets) != 1 or not isinstance(call, ast.Call) or call.keywords:
                continue
            target = stmt.targets[0]
            name = imports.warp_name(call.func)
            if name not in ATOMICS_RETURNING_OLD or not isinstance(target, ast.Subscript):
                continue
            indices = _indices(target)
            args = call.args
            if len(args) != len(indices) + 2 or not _same(args[0], target.value):
                continue
            if not all(_same(a, i) for a, i in zip(args[1:-1], indices, strict=True)):
                continue
            call_text = ctx.source_of(call)
            yield self.report(
                ctx,
                stmt,
                f"`{ctx.source_of(target)}` is set to what `{ctx.source_of(call.func)}` returns, the "
                "element's old value: the store undoes the atomic update of that same element",
                kernel=kernel.name,
                expected=f"`{call_text}` alone (it updates the element in place)",
                actual="the old value stored back",
                hint=f"drop the assignment and keep `{call_text}`; keep the returned value only to use the "
                "old value somewhere else",
                fix=Fix(f"Keep only `{call_text}`", (ctx.replace(stmt, call_text),)),
            )
