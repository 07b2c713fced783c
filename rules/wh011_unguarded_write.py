"""## WH011 unguarded-write

A kernel writes `a[i]` (or `a[i, ...]`) with a thread index `i` from `wp.tid()`, has no bounds
guard on `i`, and is launched (in the same file) with a `dim` that is provably larger than the
first extent of the host array passed for `a`: for example `a = wp.zeros(n)` and
`wp.launch(k, dim=n + 1, inputs=[a])`. The difference must be a positive constant (`n + 1`
against `n`, `64` against `60`); any other relation, any name reassigned on the host between
allocation and launch, and any `if`/`while` or early `return` in the kernel that looks at `i`
(or at anything computed from it) keeps the rule quiet, and so do launches recorded for later
(`record_cmd=True`: `set_dim` may change their size).

### Why it matters
The extra threads write past the end of the array. Warp does not check bounds in release
builds: on the CPU the heap is corrupted and the process may abort at exit (SIGABRT) or crash
(SIGSEGV); on a GPU other allocations are silently overwritten. Only debug mode
(`wp.set_module_options({"mode": "debug"})`) reports it: `Assertion failed: 'i >= -arr.shape[0]
&& i < arr.shape[0]'`, after which the process dies (SIGILL).

The fix inserts an early-return guard right after the `wp.tid()` line.

### Bad
```python
@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0

a = wp.zeros(n, dtype=float)
wp.launch(fill, dim=n + 1, inputs=[a])
```

### Good
```python
@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    if i >= a.shape[0]:
        return
    a[i] = 1.0
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace

from warp_harness.model.constants import Linear, linear
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launches import HostArray, LaunchSite
from warp_harness.model.types import Array
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import (
    deferred_launch,
    derived_names,
    iter_statements,
    launch_arguments,
    launch_kernel,
    mentions,
)

_ATOMIC_WRITES = {
    "atomic_add",
    "atomic_sub",
    "atomic_min",
    "atomic_max",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_cas",
    "atomic_exch",
    "array_store",
}
# calls that give the same value each time they are evaluated on the host (for comparing sizes)
_STABLE_CALLS = {"len", "int"}


@dataclass
class _Write:
    stmt: ast.stmt
    target: ast.Subscript
    array: str
    tid_var: str
    axis: int  # position of the tid variable in wp.tid()'s unpacking


def _stored_names(nodes: list[ast.AST]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                counts[node.id] = counts.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):
                counts[node.arg] = counts.get(node.arg, 0) + 1
    return counts


def _has_exit(stmt: ast.stmt) -> bool:
    return any(isinstance(n, ast.Return | ast.Break | ast.Continue) for n in ast.walk(stmt))


def _guarded(body: list[ast.stmt], target: ast.stmt, names: set[str]) -> bool | None:
    """Whether ``target`` (inside ``body``) is behind a condition on ``names``; None if not in ``body``."""
    for stmt in body:
        if stmt is target:
            return False
        inner: list[list[ast.stmt]] = []
        tests: list[ast.expr] = []
        if isinstance(stmt, ast.If | ast.While):
            inner, tests = [stmt.body, stmt.orelse], [stmt.test]
        elif isinstance(stmt, ast.For):
            inner, tests = [stmt.body, stmt.orelse], [stmt.iter]
        elif isinstance(stmt, ast.With | ast.Try):
            inner = [getattr(stmt, "body", [])]
        # ``target`` comes from `iter_statements`: it is inside ``stmt`` only if reached the same way
        if any(node is target for node in iter_statements([stmt])):
            if isinstance(stmt, ast.If | ast.While) and any(mentions(t, names) for t in tests):
                return True
            for block in inner:
                found = _guarded(block, target, names)
                if found is not None:
                    return found
            return None
        # an earlier statement that may leave the kernel (or the loop) depending on the index
        if _has_exit(stmt) and any(
            isinstance(n, ast.If | ast.While | ast.IfExp) and mentions(n.test, names) for n in ast.walk(stmt)
        ):
            return True
        if isinstance(stmt, ast.Assert) and mentions(stmt.test, names):
            return True
    return None


def _block_after(body: list[ast.stmt], stmt: ast.stmt) -> ast.stmt | None:
    """The statement following ``stmt`` in whichever block of ``body`` holds it."""
    for position, current in enumerate(body):
        if current is stmt:
            return body[position + 1] if position + 1 < len(body) else None
        for field in ("body", "orelse", "finalbody"):
            block = getattr(current, field, None)
            if isinstance(block, list):
                found = _block_after(block, stmt)
                if found is not None:
                    return found
    return None


class UnguardedWrite(Rule):
    id = "WH011"
    name = "unguarded-write"
    summary = "thread-indexed write past the end of the array: launch dim larger than the array, no guard"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        sites = [
            s
            for s in ctx.model.launches_of(kernel)
            if launch_kernel(ctx, s) is kernel and not deferred_launch(s)
        ]
        # parameters some launch passes a host array of known size to: the only writes worth a look
        sized = {
            param.name
            for site in sites
            for arg, param in zip(launch_arguments(site) or [], kernel.params, strict=False)
            if isinstance(arg, ast.Name) and arg.id in site.host_arrays
        }
        if not sized:
            return
        types = ctx.model.types(kernel)
        writes = self._unguarded_writes(kernel, types, sized)
        reported: set[tuple[str, int]] = set()
        for write in writes:
            key = (write.array, write.axis)
            if key in reported:
                continue  # one finding (and one guard) per array and index
            records = [
                r
                for r in (self._check_site(ctx, kernel, types, write, site, writes) for site in sites)
                if r is not None
            ]
            if records:
                reported.add(key)
                first = records[0]
                more = tuple(rel for r in records[1:] for rel in r.related)
                yield replace(first, related=first.related + more) if more else first

    def _unguarded_writes(self, kernel: KernelDef, types: KernelTypes, sized: set[str]) -> list[_Write]:
        params = {p.name: p for p in kernel.params if p.name in sized}
        candidates: list[tuple[ast.stmt, ast.Subscript, str, ast.Name]] = []
        for node in iter_statements(kernel.node.body):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign):
                targets = [node.target]
            for target in targets:
                if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Name):
                    continue
                name = target.value.id
                param = params.get(name)
                if param is None or not isinstance(param.type, Array):
                    continue
                first = (
                    target.slice.elts[0]
                    if isinstance(target.slice, ast.Tuple) and target.slice.elts
                    else target.slice
                )
                if isinstance(first, ast.Name) and first.id in types.tid_vars:
                    assert isinstance(node, ast.stmt)
                    candidates.append((node, target, name, first))
        if not candidates:
            return []
        counts: dict[str, int] | None = None
        found: list[_Write] = []
        derived: dict[str, set[str]] = {}
        for stmt, target, name, first in candidates:
            # a guard on the index itself is the common case; only then follow values computed from it
            if _guarded(kernel.node.body, stmt, {first.id}) is not False:
                continue
            if counts is None:
                counts = _stored_names([*kernel.node.body, kernel.node.args])
            if counts.get(name, 0) != 1 or counts.get(first.id) != 1:
                continue  # the array or the index is reassigned in the kernel
            if first.id not in derived:
                derived[first.id] = derived_names(kernel, first.id)
            if _guarded(kernel.node.body, stmt, derived[first.id]) is not False:
                continue
            found.append(_Write(stmt, target, name, first.id, types.tid_vars[first.id]))
        return found

    def _dim_component(self, site: LaunchSite, axis: int) -> ast.expr | None:
        node = site.dim
        if isinstance(node, ast.Name) and node.id in site.local_aliases:
            node = site.local_aliases[node.id]
        if isinstance(node, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in node.elts) or axis >= len(node.elts):
                return None
            return node.elts[axis]
        return node if axis == 0 else None

    def _stable(self, ctx: RuleContext, site: LaunchSite, node: ast.expr, depth: int = 0) -> bool:
        """Whether ``node`` means the same value at the allocation and at the launch."""
        if depth > 20:
            return False
        assigned = _stored_names([site.scope])
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                name = (
                    sub.func.id if isinstance(sub.func, ast.Name) else ctx.model.imports.warp_name(sub.func)
                )
                if name not in _STABLE_CALLS and name not in ("int32", "int64"):
                    return False
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id in site.local_aliases:
                    if not self._stable(ctx, site, site.local_aliases[sub.id], depth + 1):
                        return False
                elif sub.id in ctx.model.constants.values and sub.id not in assigned:
                    continue
                elif assigned.get(sub.id, 0) > (
                    1
                    if isinstance(site.scope, ast.FunctionDef | ast.AsyncFunctionDef)
                    and self._is_param(site, sub.id)
                    else 0
                ):
                    return False  # reassigned in the launching scope: the two sides may differ
        return True

    def _is_param(self, site: LaunchSite, name: str) -> bool:
        scope = site.scope
        if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        args = scope.args
        return any(a.arg == name for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))

    def _check_site(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        write: _Write,
        site: LaunchSite,
        writes: list[_Write],
    ) -> Record | None:
        args = launch_arguments(site)
        if args is None or len(args) != len(kernel.params):
            return None
        names = max((n for _, n in types.tid_unpacks), default=0)
        rank = site.dim_rank(ctx.model.constants.values, ctx.model.imports)
        if rank is None or names not in ((rank, rank + 1) if site.tiled else (rank,)) or write.axis >= rank:
            return None
        position = next(k for k, p in enumerate(kernel.params) if p.name == write.array)
        arg = args[position]
        if not isinstance(arg, ast.Name) or arg.id not in site.host_arrays:
            return None
        host: HostArray = site.host_arrays[arg.id]
        if (host.node.lineno, host.node.col_offset) > (site.node.lineno, site.node.col_offset):
            return None
        dim = self._dim_component(site, write.axis)
        if dim is None or not self._stable(ctx, site, dim) or not self._stable(ctx, site, host.extent):
            return None
        env = {**ctx.model.constants.values, **site.local_values}
        dim_form = linear(dim, env, ctx.model.imports, site.local_aliases)
        extent_form = linear(host.extent, env, ctx.model.imports, site.local_aliases)
        if dim_form is None or extent_form is None:
            return None
        excess: Linear = dim_form - extent_form
        if not excess.is_constant or excess.const <= 0 or excess.const != int(excess.const):
            return None
        extra = int(excess.const)
        dim_text = ctx.source_of(dim)
        extent_text = ctx.source_of(host.extent)
        element = ctx.source_of(write.target)
        along = "" if write.axis == 0 else f", dimension {write.axis}"
        passed = f"`{write.array}`" if arg.id == write.array else f"`{write.array}` (`{arg.id}`)"
        plural = "s" if extent_text != "1" else ""
        related = [
            Related(ctx.location(site.node, kernel.name), f"launched here with dim `{dim_text}`{along}"),
            Related(
                ctx.location(host.node, kernel.name),
                f"`{arg.id}` is allocated here with `{extent_text}` element{plural} along axis 0",
            ),
        ]
        guard = f"if {write.tid_var} >= {write.array}.shape[0]:"
        past = (
            f"the last value of `{write.tid_var}` writes"
            if extra == 1
            else f"the last {extra} values of `{write.tid_var}` write"
        )
        return self.report(
            ctx,
            write.stmt,
            f"`{element}` is written for every `{write.tid_var}` below `{dim_text}` (the launch dim{along}) "
            f"but {passed} has `{extent_text}` element{plural} along axis 0: {past} out of bounds, and the "
            f"kernel has no guard on `{write.tid_var}`",
            kernel=kernel.name,
            expected=f"{write.tid_var} < {write.array}.shape[0] ({extent_text})",
            actual=f"{write.tid_var} < {dim_text}",
            hint=f"return early when the index is past the end (`{guard} return` after the `wp.tid()` line), "
            f"or launch with dim `{extent_text}`",
            fix=self._fix(ctx, kernel, types, write, writes, guard),
            related=related,
        )

    def _fix(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        write: _Write,
        writes: list[_Write],
        guard: str,
    ) -> Fix | None:
        tid_stmt = next(
            (
                node
                for node in walk_body(kernel.node)
                if isinstance(node, ast.Assign)
                and any(node.value is call for call, _ in types.tid_unpacks)
                and write.tid_var
                in {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            ),
            None,
        )
        if tid_stmt is None:
            return None
        following = _block_after(kernel.node.body, tid_stmt)
        if following is None or following.lineno == tid_stmt.end_lineno:
            return None
        line = ctx.model.lines[following.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        if indent.strip():
            return None
        unit = "\t" if indent.startswith("\t") else "    "
        edit = ctx.insert_line_before(following, f"{guard}\n{indent}{unit}return")
        # safe when the guarded-out threads did nothing else but write out of bounds
        others = [
            node
            for node in walk_body(kernel.node)
            if isinstance(node, ast.Call) and ctx.model.imports.warp_name(node.func) in _ATOMIC_WRITES
        ]
        safe = not others and all(w.array == write.array for w in writes) and self._only_writes(kernel, write)
        return Fix(f"Return early when `{write.tid_var} >= {write.array}.shape[0]`", (edit,), safe=safe)

    def _only_writes(self, kernel: KernelDef, write: _Write) -> bool:
        """Every store in the kernel goes to ``write.array`` at the same thread index on axis 0."""
        for node in walk_body(kernel.node):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    continue
                if (
                    not isinstance(target, ast.Subscript)
                    or not isinstance(target.value, ast.Name)
                    or target.value.id != write.array
                ):
                    return False
                first = (
                    target.slice.elts[0]
                    if isinstance(target.slice, ast.Tuple) and target.slice.elts
                    else target.slice
                )
                if not (isinstance(first, ast.Name) and first.id == write.tid_var):
                    return False
        return True
