"""## WH024 tid-shadowed

A `for` loop reuses the name of the thread index as its loop variable (`i = wp.tid()` then
`for i in range(n):`), and the code after the loop reads that name again (`out[i] = s`) as if it were
still the thread index. The loop has no `break`, so after it the name holds the loop's last value.

Rebinding the thread index on purpose (`tid = indices[tid]`, then using the new value consistently) is
common in real code and is not reported; neither is a loop that reuses the name after its last use as
the thread index, nor one whose variable is assigned again before it is read.

### Why it matters
After `for i in range(n)`, Warp's `i` is the loop variable: the last value of the range for every
thread, so `out[i] = s` makes all threads write the same element (measured with Warp 1.19 on the CPU:
ten threads each summing `a[0..9]` write only `out[9]`, every other element stays 0), and when the range
is empty the variable is never assigned: the generated C++ reads an uninitialised index (the CPU
process died with SIGSEGV). Warp compiles it without a warning.

The fix renames the loop variable.

### Bad
```python
@wp.kernel
def center(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for i in range(n):
        s += a[i]
    out[i] = a[i] - s / float(n)
```

### Good
```python
@wp.kernel
def center(a: wp.array(dtype=float), out: wp.array(dtype=float), n: int):
    i = wp.tid()
    s = float(0.0)
    for j in range(n):
        s += a[j]
    out[i] = a[i] - s / float(n)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.record import QUOTED_LINE, Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import kernel_model

_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try)


def _loads(node: ast.AST, name: str) -> list[ast.Name]:
    return [
        n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
    ]


def _stores(node: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store | ast.Del)
        for n in ast.walk(node)
    )


def _breaks(loop: ast.For) -> bool:
    """A ``break`` that leaves ``loop`` itself (not one of a nested loop)."""
    stack: list[ast.AST] = [*loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, ast.For | ast.While):
            stack.extend(node.orelse)  # a break in a nested loop's `else` leaves this loop
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _headers(stmt: ast.stmt) -> list[ast.AST]:
    """What a compound statement evaluates before its blocks."""
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.For):
        return [stmt.iter]
    if isinstance(stmt, ast.With):
        return [item.context_expr for item in stmt.items]
    return []


def _first_read(following: list[ast.stmt], name: str) -> ast.Name | bool | None:
    """The first read of ``name`` in ``following`` (statements in execution order) before anything assigns
    it; False when an assignment (or a return) comes first or when unsure."""
    for stmt in following:
        if isinstance(stmt, _COMPOUND):
            for header in _headers(stmt):
                loads = _loads(header, name)
                if loads:
                    return loads[0]
            if _stores(stmt, name):
                return False
            loads = _loads(stmt, name)
            if loads:
                return loads[0]
            continue
        loads = _loads(stmt, name)
        if loads:
            return loads[0]  # a simple statement evaluates its value before it assigns
        if _stores(stmt, name) or isinstance(stmt, ast.Return | ast.Break | ast.Continue):
            return False
    return None


def _after(body: list[ast.stmt], target: ast.stmt) -> list[ast.stmt] | None:
    """The statements that run after ``target`` (inside ``body``): the rest of its block, then the rest of
    each enclosing block. A loop around ``target`` comes back to its start: None (unsure) then."""
    for position, stmt in enumerate(body):
        if stmt is target:
            return body[position + 1 :]
        blocks: list[list[ast.stmt]] = []
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                blocks.append(block)
        blocks.extend(handler.body for handler in getattr(stmt, "handlers", []) or [])
        for block in blocks:
            inner = _after(block, target)
            if inner is None:
                continue
            if isinstance(stmt, ast.For | ast.While):
                return None if not inner else [*inner, stmt]  # the loop's next iteration comes back
            return [*inner, *body[position + 1 :]]
    return None


class TidShadowed(Rule):
    id = "WH024"
    name = "tid-shadowed"
    summary = "a loop variable reuses the thread index's name and is read after the loop"
    severity = Severity.ERROR
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel:
            return
        loops = [n for n in body_index(kernel.node).of(ast.For) if isinstance(n.target, ast.Name)]
        if not loops:
            return
        types = kernel_model(ctx, kernel).types(kernel)
        calls = {id(call) for call, _ in types.tid_unpacks}
        tid_lines = self._tid_assignments(kernel, set(types.tid_vars), calls)
        for loop in loops:
            assert isinstance(loop.target, ast.Name)
            name = loop.target.id
            bound = tid_lines.get(name)
            if bound is None or (bound.lineno, bound.col_offset) > (loop.lineno, loop.col_offset):
                continue
            if loop.orelse or _breaks(loop):
                continue
            following = _after(kernel.node.body, loop)
            if not following:
                continue
            read = _first_read(following, name)
            if not isinstance(read, ast.Name):
                continue
            yield self._record(ctx, kernel, loop, bound, read)

    def _tid_assignments(self, kernel: KernelDef, names: set[str], calls: set[int]) -> dict[str, ast.Assign]:
        """The first ``... = wp.tid()`` binding of each thread-index name."""
        found: dict[str, ast.Assign] = {}
        for node in body_index(kernel.node).of(ast.Assign):
            if id(node.value) in calls:
                for target in node.targets:
                    for element in ast.walk(target):
                        if isinstance(element, ast.Name) and element.id in names and element.id not in found:
                            found[element.id] = node
        return found

    def _record(
        self, ctx: RuleContext, kernel: KernelDef, loop: ast.For, bound: ast.Assign, read: ast.Name
    ) -> Record:
        assert isinstance(loop.target, ast.Name)
        name = loop.target.id
        statement = next(
            (
                n
                for n in walk_body(kernel.node)
                if isinstance(n, ast.stmt)
                and not isinstance(n, _COMPOUND)
                and any(m is read for m in ast.walk(n))
            ),
            None,
        )
        used = ctx.source_of(statement).splitlines()[0] if statement is not None else name
        return self.report(
            ctx,
            read,
            f"`{name}` is the thread index (`wp.tid()`, line {QUOTED_LINE}) but the loop on line "
            f"{QUOTED_LINE} reuses it as its variable: here, after the loop, `{name}` is the loop's last "
            f"value (the same for every thread, and unassigned when the loop does not run), not the "
            f"thread index (`{used}`)",
            kernel=kernel.name,
            expected=f"`{name}` = the thread index",
            actual=f"`{name}` = the last value of `{ctx.source_of(loop.iter)}`",
            hint="give the loop its own variable",
            fix=self._fix(ctx, kernel, loop),
            related=[
                Related(ctx.location(loop.target, kernel.name), f"the loop rebinds `{name}` here"),
                Related(ctx.location(bound, kernel.name), f"`{name}` is the thread index here"),
            ],
            lines=(bound.lineno, loop.lineno),
        )

    def _fix(self, ctx: RuleContext, kernel: KernelDef, loop: ast.For) -> Fix | None:
        assert isinstance(loop.target, ast.Name)
        name = loop.target.id
        taken = {n.id for n in ast.walk(kernel.node) if isinstance(n, ast.Name)} | {
            p.name for p in kernel.params
        }
        fresh = next(
            (
                c
                for c in ("j", "k", "m", "jj", f"{name}_loop", f"{name}_iter")
                if c not in taken and c != name
            ),
            None,
        )
        if fresh is None:
            return None
        occurrences = [loop.target] + [
            n for stmt in loop.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id == name
        ]
        edits = tuple(ctx.replace(n, fresh) for n in occurrences)
        return Fix(f"Rename the loop variable to `{fresh}`", edits)
