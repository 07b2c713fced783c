"""## WH044 by-value-component-store

A kernel writes into a component or field of one of its by-value parameters (a vector, matrix,
quaternion, transform or `@wp.struct`): `lower[i] = ...`, `b.x += ...`, `p.v[0] = ...`; or a
`@wp.func` does the same to its own parameter and neither returns it nor reads it afterwards.
Writes through a field that is an array (`s.counts[i] = 1` for a struct with an array field) do
arrive and are not reported; neither is a parameter updated and then used as a local.

### Why it matters
Warp passes these values by copy, to kernels and to functions alike. The write changes the
thread's copy and is lost when the thread (or the function) returns: the host's `wp.vec3` or struct
instance, or the array element the caller passed in, keeps its old value. Warp compiles it without a
word (measured with Warp 1.19; NVIDIA/warp#411, #541, #878). Write results into an array (`wp.array`
of the vector or struct type) or return the updated value from the function.

A warning: nothing fails, the code only does nothing.

### Bad
```python
@wp.kernel
def get_aabb(points: wp.array(dtype=wp.vec3), lower: wp.vec3):
    tid = wp.tid()
    for i in range(points.shape[0]):
        lower[tid] = wp.min(lower[tid], points[i][tid])
```

### Good
```python
@wp.kernel
def get_aabb(points: wp.array(dtype=wp.vec3), lower: wp.array(dtype=float)):
    tid = wp.tid()
    for i in range(points.shape[0]):
        lower[tid] = wp.min(lower[tid], points[i][tid])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef, Param
from warp_harness.model.types import Array, Matrix, Quaternion, Struct, Transform, Vector, warp_type_name
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_BY_VALUE = (Vector, Matrix, Quaternion, Transform, Struct)


def _root(target: ast.expr) -> tuple[ast.Name | None, bool]:
    """The name a subscript or attribute store writes through, and whether every step stays by value
    (False when the chain passes through something that is not a plain subscript or attribute)."""
    node = target
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return (node, True) if isinstance(node, ast.Name) else (None, False)


def _through_array(types: KernelTypes, target: ast.expr) -> bool:
    """Whether a container on the way down to ``target``'s root is an array (or of unknown type): such
    a write reaches memory the caller sees."""
    node = target
    while isinstance(node, ast.Subscript | ast.Attribute):
        container = node.value
        if not isinstance(container, ast.Name):
            kind = types.of(container)
            if isinstance(kind, Array) or not isinstance(kind, _BY_VALUE):
                return True
        node = container
    return False


def _targets(stmt: ast.stmt) -> list[ast.expr]:
    if isinstance(stmt, ast.Assign):
        return list(stmt.targets)
    if isinstance(stmt, ast.AugAssign):
        return [stmt.target]
    return []


class ByValueComponentStore(Rule):
    id = "WH044"
    name = "by-value-component-store"
    summary = "a write into a component or field of a by-value parameter: the caller never sees it"
    severity = Severity.WARNING

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        params = {p.name: p for p in kernel.params if isinstance(p.type, _BY_VALUE)}
        if not params:
            return
        index = body_index(kernel.node)
        stores: dict[str, list[tuple[ast.stmt, ast.expr]]] = {}
        for stmt in index.of_any(ast.Assign, ast.AugAssign):
            assert isinstance(stmt, ast.Assign | ast.AugAssign)
            for target in _targets(stmt):
                if not isinstance(target, ast.Subscript | ast.Attribute):
                    continue
                root, _ = _root(target)
                if root is not None and root.id in params:
                    stores.setdefault(root.id, []).append((stmt, target))
        if not stores:
            return
        types = ctx.types(kernel)
        for name, found in stores.items():
            lost = [(s, t) for s, t in found if not _through_array(types, t)]
            if lost and not self._observed(kernel, name, [s for s, _ in found]):
                yield self._record(ctx, kernel, params[name], lost)

    def _observed(self, kernel: KernelDef, name: str, stores: list[ast.stmt]) -> bool:
        """Whether the parameter is read outside its own stores after the first of them (or in a loop
        around it), or rebound as a whole: then it is a local the function goes on using."""
        index = body_index(kernel.node)
        inside = {id(n) for s in stores for n in ast.walk(s)}
        first = min((s.lineno, s.col_offset) for s in stores)
        loops = [n for n in index.of_any(ast.For, ast.While)]
        for node in index.of(ast.Name):
            if node.id != name or id(node) in inside:
                continue
            if isinstance(node.ctx, ast.Store):
                return True
            if (node.lineno, node.col_offset) > first:
                return True
            if any(
                self._encloses(loop, node) and any(self._encloses(loop, s) for s in stores) for loop in loops
            ):
                return True
        return False

    @staticmethod
    def _encloses(outer: ast.AST, inner: ast.AST) -> bool:
        return any(n is inner for n in ast.walk(outer))

    def _record(
        self, ctx: RuleContext, kernel: KernelDef, param: Param, lost: list[tuple[ast.stmt, ast.expr]]
    ) -> Record:
        _, target = lost[0]
        kind = warp_type_name(param.type)
        whom = "the host" if kernel.is_kernel else "the caller"
        instead = (
            f"make `{param.name}` an array (`wp.array(dtype=...)`) and write into it"
            if kernel.is_kernel
            else f"return the updated `{param.name}` and assign it where `{kernel.name}` is called"
        )
        return self.report(
            ctx,
            target,
            f"`{ctx.source_of(target)}` writes into the by-value parameter `{param.name}` ({kind}) of "
            f"{kernel.kind} `{kernel.name}`, which is never read afterwards: the write changes a copy "
            f"and {whom} never sees it",
            kernel=kernel.name,
            expected="results written to an array" if kernel.is_kernel else "the updated value returned",
            actual=f"a write into a copy of `{param.name}`",
            hint=instead,
            related=[Related(ctx.location(param.node, kernel.name), f"`{param.name}` is passed by value")]
            + [Related(ctx.location(t, kernel.name), "also written here") for _, t in lost[1:]],
            end_node=target,
        )
