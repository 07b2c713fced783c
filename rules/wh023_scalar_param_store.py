"""## WH023 scalar-param-store

A kernel updates one of its scalar (or vector, matrix, quaternion, transform) parameters, as in
`count = count + 1` or `total += x[i]`, and never reads the updated value afterwards: the update can
only have been meant for the caller. Kernel arguments are passed by value; only arrays reach back to the
host. A parameter reassigned and then used as a local (`n = n - 1` followed by a loop over `n`) is
fine and is not reported.

### Why it matters
Warp compiles the update without a word (measured with Warp 1.19: no error at codegen or launch, no
warning) and the host's value never changes: `wp.launch(k, inputs=[x, 0, 0.0])` leaves the Python
variables and the launch arguments exactly as they were. A counter or a sum computed this way is lost.

Write results into an array instead, with an atomic operation when several threads update the same
element: `count: wp.array(dtype=int)` and `wp.atomic_add(count, 0, 1)`. The fix does that in the
kernel (the launch must then pass an array; so the fix is offered, not applied by `check --fix`).

### Bad
```python
@wp.kernel
def count_active(x: wp.array(dtype=float), count: int):
    i = wp.tid()
    if x[i] > 0.5:
        count = count + 1
```

### Good
```python
@wp.kernel
def count_active(x: wp.array(dtype=float), count: wp.array(dtype=int)):
    i = wp.tid()
    if x[i] > 0.5:
        wp.atomic_add(count, 0, 1)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef, Param
from warp_harness.model.types import Matrix, Quaternion, Scalar, Transform, Vector, warp_type_name
from warp_harness.record import Fix, Record, Related, Severity, TextEdit
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body

_BY_VALUE = (Scalar, Vector, Matrix, Quaternion, Transform)


def _store_value(stmt: ast.AST, name: str) -> ast.expr | bool | None:
    """For a statement that assigns ``name`` as a whole: its value (the right-hand side), None for an
    augmented assignment; False for anything else."""
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
        return None
    if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
        return stmt.value
    return False


class ScalarParamStore(Rule):
    id = "WH023"
    name = "scalar-param-store"
    summary = "a kernel updates a by-value parameter and never reads it again: the host never sees it"
    severity = Severity.ERROR
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel:
            return
        candidates = [p for p in kernel.params if isinstance(p.type, _BY_VALUE)]
        if not candidates:
            return
        stored = {n.id for n in body_index(kernel.node).of(ast.Name) if isinstance(n.ctx, ast.Store)}
        for param in candidates:
            if param.name in stored:
                record = self._check_param(ctx, kernel, param)
                if record is not None:
                    yield record

    def _check_param(self, ctx: RuleContext, kernel: KernelDef, param: Param) -> Record | None:
        name = param.name
        stores: list[ast.stmt] = []
        for node in walk_body(kernel.node):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                owner = self._owner(kernel, node)
                if owner is None or _store_value(owner, name) is False:
                    return None  # a loop target, an unpacking, `with ... as`: not followed
                if owner not in stores:
                    stores.append(owner)
        if not stores:
            return None
        # the values the stores compute may read the parameter (the update itself); any other read observes it
        inside = {id(n) for s in stores for n in ast.walk(s)}
        reads = [
            n
            for n in walk_body(kernel.node)
            if isinstance(n, ast.Name)
            and n.id == name
            and isinstance(n.ctx, ast.Load)
            and id(n) not in inside
        ]
        updates = [s for s in stores if isinstance(s, ast.AugAssign) or self._mentions(s, name)]
        if not updates:
            return None  # only overwritten: a local reusing the name, not an accumulation
        first = min(stores, key=lambda s: (s.lineno, s.col_offset))
        for read in reads:
            if (read.lineno, read.col_offset) > (first.lineno, first.col_offset):
                return None
            if any(
                self._encloses(loop, read) and self._encloses(loop, first) for loop in self._loops(kernel)
            ):
                return None  # read again on the next iteration
        update = updates[0]
        kind = warp_type_name(param.type)
        return self.report(
            ctx,
            update,
            f"`{ctx.source_of(update).splitlines()[0]}` updates the kernel parameter `{name}` ({kind}), "
            f"which is passed by value and never read afterwards: the update is lost when the thread ends "
            f"and the host never sees it",
            kernel=kernel.name,
            expected="results written to an array",
            actual=f"a store into the by-value parameter `{name}`",
            hint=f"make `{name}` an array and update it with an atomic (`wp.atomic_add({name}, 0, value)`)",
            fix=self._fix(ctx, kernel, param, stores),
            related=[Related(ctx.location(param.node, kernel.name), f"`{name}` is a {kind} parameter")]
            + [Related(ctx.location(s, kernel.name), f"`{name}` is also updated here") for s in updates[1:]],
        )

    def _mentions(self, stmt: ast.stmt, name: str) -> bool:
        value = _store_value(stmt, name)
        return isinstance(value, ast.expr) and any(
            isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)
        )

    def _owner(self, kernel: KernelDef, target: ast.Name) -> ast.stmt | None:
        """The statement whose target holds ``target``."""
        for node in walk_body(kernel.node):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For):
                targets = [node.target]
            elif isinstance(node, ast.With):
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            if any(n is target for t in targets for n in ast.walk(t)):
                assert isinstance(node, ast.stmt)
                return node
        return None

    def _loops(self, kernel: KernelDef) -> list[ast.For | ast.While]:
        return [n for n in walk_body(kernel.node) if isinstance(n, ast.For | ast.While)]

    def _encloses(self, outer: ast.AST, inner: ast.AST) -> bool:
        return any(n is inner for n in ast.walk(outer))

    def _fix(self, ctx: RuleContext, kernel: KernelDef, param: Param, stores: list[ast.stmt]) -> Fix | None:
        """``name: int`` -> ``name: wp.array(dtype=int)``; each ``name += v`` -> ``wp.atomic_add(name, 0, v)``
        (``-=``: ``wp.atomic_sub``)."""
        warp = next((local for local, module in ctx.imports.modules.items() if module == "warp"), None)
        if warp is None or not isinstance(param.type, Scalar) or param.annotation is None:
            return None
        name = param.name
        edits: list[TextEdit] = [
            ctx.replace(param.annotation, f"{warp}.array(dtype={ctx.source_of(param.annotation)})")
        ]
        for stmt in stores:
            op: ast.operator
            if isinstance(stmt, ast.AugAssign):
                op, value = stmt.op, stmt.value
            elif (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.value, ast.BinOp)
                and isinstance(stmt.value.left, ast.Name)
                and stmt.value.left.id == name
            ):
                op, value = stmt.value.op, stmt.value.right
            else:
                return None
            if not isinstance(op, ast.Add | ast.Sub) or any(
                isinstance(n, ast.Name) and n.id == name for n in ast.walk(value)
            ):
                return None
            atomic = "atomic_add" if isinstance(op, ast.Add) else "atomic_sub"
            edits.append(ctx.replace(stmt, f"{warp}.{atomic}({name}, 0, {ctx.source_of(value)})"))
        return Fix(f"Make `{name}` an array updated with an atomic", tuple(edits), safe=False)
