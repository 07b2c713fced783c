"""## WH061 sentinel-result-as-index

A `@wp.func` of the same file returns a negative constant on some path (`return -1`,
`return NULL_ELEMENT_INDEX` with `NULL_ELEMENT_INDEX = wp.constant(-1)`), and the caller indexes an
array with its result without ever comparing it: no `if idx < 0`, no `idx == NULL`, no `wp.where`.

### Why it matters
The negative value means "none" (a point outside the grid, no element found), but Warp indexes with
it anyway: `-1` reads (or writes) the array's last element, as numpy does, without a bounds error
even in debug mode. The kernel goes on with plausible data from the wrong element (measured with
Warp 1.19 on the CPU; NVIDIA/warp@12ab997, where a particle that left the grid got the coordinates
of the last cell). Compare the result with the sentinel before using it as an index.

A warning: the function may never return the sentinel for the inputs it gets.

### Bad
```python
@wp.func
def cell_lookup(cell_size: float, res: int, x: float) -> int:
    i = int(wp.floor(x / cell_size))
    if i < 0 or i >= res:
        return -1
    return i


@wp.kernel
def bin_particles(origin: wp.array(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    p = wp.tid()
    cell = cell_lookup(1.0, origin.shape[0], x[p])
    out[p] = x[p] - origin[cell]
```

### Good
```python
@wp.func
def cell_lookup(cell_size: float, res: int, x: float) -> int:
    i = int(wp.floor(x / cell_size))
    if i < 0 or i >= res:
        return -1
    return i


@wp.kernel
def bin_particles(origin: wp.array(dtype=float), x: wp.array(dtype=float), out: wp.array(dtype=float)):
    p = wp.tid()
    cell = cell_lookup(1.0, origin.shape[0], x[p])
    if cell == -1:
        out[p] = 0.0
    else:
        out[p] = x[p] - origin[cell]
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from warp_harness.model.constants import Value, fold
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Array
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


def _sentinel_return(
    func: KernelDef, constants: Mapping[str, Value], imports: ImportMap
) -> ast.Return | None:
    """The first ``return`` of ``func`` whose value is a negative integer constant."""
    for ret in body_index(func.node).of(ast.Return):
        if ret.value is None:
            continue
        value = fold(ret.value, constants, imports)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            return ret
    return None


def _checked_or_passed_on(kernel: KernelDef) -> set[str]:
    """Names the kernel compares, tests, or hands to a call: any of those may be a check of a sentinel."""
    names: set[str] = set()
    index = body_index(kernel.node)
    tested: list[ast.AST] = [*index.of(ast.Compare), *index.of(ast.BoolOp)]
    tested += [n.test for n in index.of(ast.If)]
    tested += [n.test for n in index.of(ast.While)]
    tested += [n.test for n in index.of(ast.IfExp)]
    tested += [a for call in index.of(ast.Call) for a in (*call.args, *(k.value for k in call.keywords))]
    for node in tested:
        names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    return names


def _stored_names(kernel: KernelDef) -> list[str]:
    return [n.id for n in body_index(kernel.node).of(ast.Name) if isinstance(n.ctx, ast.Store)]


def _index_names(node: ast.Subscript) -> list[str]:
    index = node.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return [p.id for p in parts if isinstance(p, ast.Name)]


class SentinelResultAsIndex(Rule):
    id = "WH061"
    name = "sentinel-result-as-index"
    summary = "an array indexed by a @wp.func result that may be its negative 'none' value, never checked"
    severity = Severity.WARNING
    priority = 40

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.FUNCS, Fact.CONSTANTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        funcs = ctx.funcs
        if not funcs:
            return
        arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
        if not arrays:
            return
        overloaded = ctx.overloaded_funcs
        constants = ctx.constants.values
        imports = ctx.imports
        index = body_index(kernel.node)
        sources: dict[str, tuple[ast.Call, KernelDef, ast.Return]] = {}
        for stmt in index.of(ast.Assign):
            call = stmt.value
            if (
                len(stmt.targets) != 1
                or not isinstance(stmt.targets[0], ast.Name)
                or not isinstance(call, ast.Call)
            ):
                continue
            func = call.func
            if not isinstance(func, ast.Name) or func.id not in funcs or func.id in overloaded:
                continue
            ret = _sentinel_return(funcs[func.id], constants, imports)
            if ret is not None:
                sources[stmt.targets[0].id] = (call, funcs[func.id], ret)
        if not sources:
            return
        stored = _stored_names(kernel)
        checked = _checked_or_passed_on(kernel)
        reported: set[str] = set()
        for node in index.of(ast.Subscript):
            if not isinstance(node.value, ast.Name) or node.value.id not in arrays:
                continue
            for name in _index_names(node):
                if name not in sources or name in reported or name in checked or stored.count(name) != 1:
                    continue
                reported.add(name)
                call, callee, ret = sources[name]
                assert ret.value is not None
                sentinel = ctx.source_of(ret.value)
                yield self.report(
                    ctx,
                    node,
                    f"`{ctx.source_of(node)}` indexes with `{name}`, the result of `{callee.name}`, which "
                    f"returns `{sentinel}` for 'none'; a negative index reads the array's last element",
                    kernel=kernel.name,
                    expected=f"`{name}` compared with `{sentinel}` before it indexes `{node.value.id}`",
                    actual="used as an index unchecked",
                    hint=f"handle `{name} == {sentinel}` (skip, or use a default) before indexing",
                    related=[Related(ctx.location(ret), f"`{callee.name}` returns `{sentinel}` here")],
                )
