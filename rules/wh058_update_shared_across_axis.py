"""## WH058 update-shared-across-axis

A kernel launched over several axes (`world, j = wp.tid()`) updates an element indexed by only some
of its thread indices (`best[j]`), with a value that depends on another (`x[world, j]`): a running
maximum or minimum done by compare-then-store (`if v > best[j]: best[j] = v`), or a plain
read-modify-write (`acc[j] = acc[j] + x[world, j]`, `best[j] = wp.max(best[j], v)`). Every thread
of the dropped axis updates the same element.

The same holds for a tile: `wp.tile_store(out[worldid], t)` in a kernel launched over (world,
actuator) blocks, with `t` computed from the actuator, stores every actuator's tile at the same
place; the last block wins (mujoco_warp e83d46e, tests/corpus/real_bugs/tile_geometry_store_without_offset).

And for a flag: `if not skip_in[geomid]: ... skip_out[geomid] = True` in a launch over (world, geom),
where every launch of the kernel passes one array for both parameters: the threads of every world read
and set the same flag in one launch, and which worlds see it set depends on the order they run
(mujoco_warp #809, tests/corpus/real_bugs/race_shared_skip_flag_across_worlds: on the CPU every world
after the first skips its work).

And for a reset to a constant: `count = slots[cap]` in every thread and `if tid == 0: slots[cap] = 0`
in the same launch; the threads that read after the store see the new value (newton #2477, reviewed
as critical; tests/corpus/real_bugs/race_thread_zero_resets_shared_count: on the CPU every thread after
the first clears nothing). A store of another value (`t[0] = cur_t + dt` by thread 0) is not judged.

WH010 judges elements no thread index reaches (`s[0]`, a loaded index); it takes an element with a
thread index in it as the thread's own. This rule judges the other half: an element that leaves out one
of the thread indices is shared by every thread along that axis.

Not reported: updates under a condition that depends on the dropped axis (`if world == 0:`), operands
that do not depend on it (every thread stores the same value), kernels with tile operations or locks,
and kernels every launch of which in the file gives the dropped axis one thread (`dim=(1, n)`).

### Why it matters
On the CPU Warp runs a launch's threads one after another, and the result is right; on a GPU the
threads of the dropped axis run at once, read the same old value and the last store wins: a maximum
that is not the maximum, a sum that lost terms. Measured with Warp 1.19 on an H100 (the `Bad` kernel below
with a running sum beside it, 2^16 x 2 threads): the column maxima came out 130,816 and 130,817 instead
of 131,070 and 131,071, the sums 128,512 instead of 4.29e9; `wp.atomic_max` and `+=` gave the right
values (the sums to float32 rounding). The tests show the CPU result and, marked `gpu`, the lost
updates on CUDA. (The reset shape did
not show on that H100 in 5 runs of 2^16 threads; the CPU shows it.)
Reported as a warning, with the atomic fix (`wp.atomic_max(best, j, v)`,
`acc[j] += v`, which Warp makes atomic).

### Bad
```python
@wp.kernel
def column_max(x: wp.array2d(dtype=float), best: wp.array(dtype=float)):
    i, j = wp.tid()
    if x[i, j] > best[j]:
        best[j] = x[i, j]
```

### Good
```python
@wp.kernel
def column_max(x: wp.array2d(dtype=float), best: wp.array(dtype=float)):
    i, j = wp.tid()
    wp.atomic_max(best, j, x[i, j])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.shared_memory import calls_tile
from warp_harness.model.tiles import call_arg
from warp_harness.model.types import Array, Scalar
from warp_harness.model.walk import walk
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import (
    compare_then_store,
    deferred_launch,
    launch_arguments,
    uses_warp_builtin,
)

_LOCKS = {"atomic_cas", "atomic_exch"}
# element types Warp has atomic add/sub for, and those it has atomic min/max for
_ADD_TYPES = frozenset({"int32", "uint32", "int64", "uint64", "float16", "float32", "float64"})
_MINMAX_TYPES = frozenset({"int32", "uint32", "int64", "uint64", "float32", "float64"})


@dataclass(frozen=True)
class _Update:
    """One read-modify-write (or compare-then-store) of an array element in a kernel body."""

    stmt: ast.stmt
    target: ast.Subscript
    operation: str  # "+", "-", "max", "min", or "update" (another function of the old value)
    operand: ast.expr


def _same(a: ast.AST, b: ast.AST) -> bool:
    """The same expression, whether read or stored (``ast.dump`` tells the contexts apart)."""
    if isinstance(a, ast.Subscript) and isinstance(b, ast.Subscript):
        return ast.dump(a.value) == ast.dump(b.value) and ast.dump(a.slice) == ast.dump(b.slice)
    return ast.dump(a) == ast.dump(b)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


class UpdateSharedAcrossAxis(Rule):
    id = "WH058"
    name = "update-shared-across-axis"
    summary = "an element threads of one launch update, or read and set, in turn (a race on the GPU)"
    severity = Severity.WARNING
    priority = 55
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS, Fact.LAUNCHES})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        types = ctx.types(kernel)
        tids = dict(types.tid_vars)
        if not tids or len(types.tid_unpacks) != 1:
            return
        nodes = body_index(kernel.node)
        if any(_one_thread(node, tids) for node in nodes.of(ast.Compare)):
            yield from self._reset_while_read(ctx, kernel, tids)
        if len(tids) < 2:
            return
        updates = list(self._updates(kernel.node.body, []))
        tiled = calls_tile(kernel, ctx.model)
        guarded = bool(nodes.of(ast.If))
        if (not updates and not tiled and not guarded) or uses_warp_builtin(ctx, kernel, _LOCKS):
            return
        params = {p.name: p.type for p in kernel.params}
        depends = _Dependencies(kernel, set(tids))
        if tiled:
            yield from self._tile_stores(ctx, kernel, tids, depends)
            return
        yield from self._check_then_set(ctx, kernel, tids, depends, params)
        for update, conditions in updates:
            array = params.get(update.target.value.id) if isinstance(update.target.value, ast.Name) else None
            if not isinstance(array, Array):
                continue
            indices = (
                list(update.target.slice.elts)
                if isinstance(update.target.slice, ast.Tuple)
                else [update.target.slice]
            )
            used: set[str] = set()
            plain = True
            for index in indices:
                for n in walk(index):
                    if isinstance(n, ast.Name):
                        if n.id in tids:
                            used.add(n.id)
                        elif n.id not in params or isinstance(params[n.id], Array):
                            plain = False  # a local or an array: not judged here (WH010's)
                    elif isinstance(n, ast.Subscript | ast.Call | ast.Attribute):
                        plain = False
            if not plain or not used:
                continue
            dropped = set(tids) - used
            if not dropped:
                continue
            if not _reaches(update.operand, dropped, depends):
                continue  # every thread along the dropped axes stores the same value
            if any(_reaches(condition, dropped, depends) for condition in conditions):
                continue  # a condition on the dropped axis may let one thread through
            axes = sorted(dropped, key=lambda n: tids[n])
            if self._single_along(ctx, kernel, [tids[a] for a in axes]):
                continue
            yield self._report(ctx, kernel, update, array, axes)

    def _updates(
        self, body: list[ast.stmt], conditions: list[ast.expr]
    ) -> Iterator[tuple[_Update, list[ast.expr]]]:
        for stmt in body:
            if isinstance(stmt, ast.Assign):
                update = _read_modify_write(stmt)
                if update is not None:
                    yield update, conditions
            elif isinstance(stmt, ast.If):
                update = _compare_store(stmt)
                if update is not None:
                    yield update, conditions
                    continue
                yield from self._updates(stmt.body, [*conditions, stmt.test])
                yield from self._updates(stmt.orelse, [*conditions, stmt.test])
            elif isinstance(stmt, ast.For | ast.While):
                extra = [stmt.test] if isinstance(stmt, ast.While) else []
                yield from self._updates(stmt.body, [*conditions, *extra])
                yield from self._updates(stmt.orelse, conditions)

    def _tile_stores(
        self, ctx: RuleContext, kernel: KernelDef, tids: dict[str, int], depends: _Dependencies
    ) -> Iterator[Record]:
        """``wp.tile_store(out[worldid], t)`` in a launch over (world, actuator) blocks, ``t`` computed from
        the actuator: every block of that axis stores its tile at the same place, the last one wins. Only
        where every launch of the kernel in this file is a ``launch_tiled`` whose dim has a rank of its own
        for each thread index (a kernel launched elsewhere may unpack the block's lane, which all lanes
        of a block share when they store one tile together)."""
        sites = ctx.launches_of(kernel)
        if not sites or any(
            not site.tiled or site.plain_dim_rank(ctx.constants.values, ctx.imports) != len(tids)
            for site in sites
        ):
            return
        for stmt, conditions in self._statements(kernel.node.body, []):
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if not isinstance(call, ast.Call) or ctx.imports.warp_name(call.func) != "tile_store":
                continue
            destination = call_arg(call, "a", 0)
            tile = call_arg(call, "t", 1)
            offset = call_arg(call, "offset", 2)
            if destination is None or tile is None:
                continue
            placed = [destination, *([offset] if offset is not None else [])]
            used = {n.id for part in placed for n in walk(part) if isinstance(n, ast.Name)}
            reached = set().union(*(depends.of(name) for name in used)) if used else set()
            dropped = set(tids) - reached
            if not dropped or not _reaches(tile, dropped, depends):
                continue
            if any(_reaches(condition, dropped, depends) for condition in conditions):
                continue
            axes = sorted(dropped, key=lambda n: tids[n])
            if self._single_along(ctx, kernel, [tids[a] for a in axes]):
                continue
            axes_text = ", ".join(f"`{a}`" for a in axes)
            where = ctx.source_of(destination) + (
                f" at `{ctx.source_of(offset)}`" if offset is not None else ""
            )
            yield self.report(
                ctx,
                stmt,
                f"`{ctx.source_of(call.func)}` stores a tile computed from the thread index {axes_text} into "
                f"`{where}`, which does not depend on it: every block along that axis writes the same place "
                "and the last one wins, the others are lost",
                kernel=kernel.name,
                expected=f"a destination that depends on {axes_text}",
                actual=ctx.source_of(stmt),
                hint=f"store each block's tile at its own place (index the destination or the offset by "
                f"{axes_text}), or store one element: `out[..., {axes[0]}] = tile[0]`",
            )

    def _check_then_set(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        tids: dict[str, int],
        depends: _Dependencies,
        params: Mapping[str, object],
    ) -> Iterator[Record]:
        """``if not skip_in[geomid]: ... skip_out[geomid] = True`` in a launch over (world, geom), the two
        parameters one array at every launch: the threads of every world read and set one flag."""
        for stmt, conditions in self._statements(kernel.node.body, []):
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or not conditions:
                continue
            target = stmt.targets[0]
            if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Name):
                continue
            if not isinstance(params.get(target.value.id), Array) or _read_modify_write(stmt) is not None:
                continue
            used = _plain_tid_names(target, tids, params)
            if not used:
                continue
            dropped = set(tids) - used
            if not dropped or any(_reaches(c, dropped, depends) for c in conditions):
                continue
            read = self._flag_read(ctx, kernel, target, conditions, params)
            if read is None:
                continue
            axes = sorted(dropped, key=lambda n: tids[n])
            if self._single_along(ctx, kernel, [tids[a] for a in axes]):
                continue
            axes_text = ", ".join(f"`{a}`" for a in axes)
            same = (
                ""
                if isinstance(read.value, ast.Name) and read.value.id == target.value.id
                else f" (`{ctx.source_of(read.value)}` and `{target.value.id}` are one array at every launch)"
            )
            yield self.report(
                ctx,
                stmt,
                f"`{ctx.source_of(stmt)}` sets an element the condition reading `{ctx.source_of(read)}` "
                f"tests{same}; the element does not depend on the thread index {axes_text}, so the threads "
                "along that axis read and set it in the same launch: which of them see it set depends on "
                "the order they run (a race on the GPU; on the CPU every thread after the first sees it set)",
                kernel=kernel.name,
                expected=f"an element per {axes_text}, or the flag set in a separate launch",
                actual=ctx.source_of(stmt),
                hint=f"index the flag by {axes_text} too, or set it in a launch of its own after this one",
            )

    def _flag_read(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        target: ast.Subscript,
        conditions: list[ast.expr],
        params: Mapping[str, object],
    ) -> ast.Subscript | None:
        """A read of ``target``'s element in one of ``conditions``, through the same parameter or one that
        every launch of the kernel in this file binds to the same array."""
        assert isinstance(target.value, ast.Name)
        name = target.value.id
        for condition in conditions:
            for node in walk(condition):
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.value, ast.Name)
                    and ast.dump(node.slice) == ast.dump(target.slice)
                    and (node.value.id == name or self._aliased(ctx, kernel, node.value.id, name))
                ):
                    return node
        return None

    def _aliased(self, ctx: RuleContext, kernel: KernelDef, first: str, second: str) -> bool:
        names = [p.name for p in kernel.params]
        if first not in names or second not in names:
            return False
        sites = ctx.launches_of(kernel)
        if not sites:
            return False
        for site in sites:
            arguments = launch_arguments(site)
            if arguments is None or len(arguments) != len(names):
                return False
            a, b = arguments[names.index(first)], arguments[names.index(second)]
            if not (isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id == b.id):
                return False
        return True

    def _reset_while_read(
        self, ctx: RuleContext, kernel: KernelDef, tids: dict[str, int]
    ) -> Iterator[Record]:
        """``count = slots[cap]`` in every thread, ``if tid == 0: slots[cap] = 0`` in the same launch: the
        threads that read after the reset see the new value (newton #2477)."""
        if uses_warp_builtin(ctx, kernel, _LOCKS):
            return
        params = {p.name: p.type for p in kernel.params}
        one_thread = [
            (s, c) for s, c in self._statements(kernel.node.body, []) if any(_one_thread(x, tids) for x in c)
        ]
        for stmt, _ in one_thread:
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                continue
            target = stmt.targets[0]
            if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Name):
                continue
            if not isinstance(params.get(target.value.id), Array) or not _uniform_index(target, params):
                continue
            if not isinstance(stmt.value, ast.Constant | ast.UnaryOp):
                continue  # a reset to a constant (a count back to 0); other stores are not judged
            if isinstance(stmt.value, ast.UnaryOp) and not isinstance(stmt.value.operand, ast.Constant):
                continue
            read = self._read_by_all(kernel, target, tids)
            if read is None or self._single_along(ctx, kernel, list(tids.values())):
                continue
            yield self.report(
                ctx,
                stmt,
                f"`{ctx.source_of(stmt)}` runs in one thread, while every thread of the launch reads "
                f"`{ctx.source_of(target)}` (line {read.lineno}): the threads that read it after the store "
                "see the new value (on a GPU those of the blocks that start later, on the CPU every thread "
                "after the one storing)",
                kernel=kernel.name,
                expected="the element written in a separate launch, after every thread has read it",
                actual=ctx.source_of(stmt),
                hint="move the store to a kernel launched after this one (a launch boundary orders them)",
            )

    def _read_by_all(self, kernel: KernelDef, target: ast.Subscript, tids: dict[str, int]) -> ast.stmt | None:
        """A statement outside any one-thread condition that reads ``target``'s element."""
        assert isinstance(target.value, ast.Name)
        for stmt, conditions in self._statements(kernel.node.body, []):
            if any(_one_thread(c, tids) for c in conditions):
                continue
            # a compound statement's own expression (its body's statements come one by one)
            part: ast.AST = stmt
            if isinstance(stmt, ast.If | ast.While):
                part = stmt.test
            elif isinstance(stmt, ast.For):
                part = stmt.iter
            elif isinstance(stmt, ast.With | ast.Try):
                continue
            for node in walk(part):
                if (
                    isinstance(node, ast.Subscript)
                    and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == target.value.id
                    and ast.dump(node.slice) == ast.dump(target.slice)
                ):
                    return stmt
        return None

    def _statements(
        self, body: list[ast.stmt], conditions: list[ast.expr]
    ) -> Iterator[tuple[ast.stmt, list[ast.expr]]]:
        for stmt in body:
            yield stmt, conditions
            if isinstance(stmt, ast.If):
                yield from self._statements(stmt.body, [*conditions, stmt.test])
                yield from self._statements(stmt.orelse, [*conditions, stmt.test])
            elif isinstance(stmt, ast.For | ast.While):
                extra = [stmt.test] if isinstance(stmt, ast.While) else []
                yield from self._statements(stmt.body, [*conditions, *extra])
                yield from self._statements(stmt.orelse, conditions)

    def _single_along(self, ctx: RuleContext, kernel: KernelDef, positions: list[int]) -> bool:
        """Every launch of the kernel in this file gives each of ``positions`` one thread."""
        sites = ctx.launches_of(kernel)
        if not sites:
            return False
        for site in sites:
            if deferred_launch(site):
                return False
            dim = site.fold(site.dim, ctx.constants.values, ctx.imports)
            dims = dim if isinstance(dim, tuple) else (dim,)
            if not all(p < len(dims) and dims[p] == 1 for p in positions):
                return False
        return True

    def _report(
        self, ctx: RuleContext, kernel: KernelDef, update: _Update, array: Array, axes: list[str]
    ) -> Record:
        target = update.target
        element = ctx.source_of(target)
        operand = ctx.source_of(update.operand)
        indices = (
            [ctx.source_of(i) for i in target.slice.elts]
            if isinstance(target.slice, ast.Tuple)
            else [ctx.source_of(target.slice)]
        )
        alias = next((local for local, module in ctx.imports.modules.items() if module == "warp"), "wp")
        scalar = array.dtype.name if isinstance(array.dtype, Scalar) else None
        call: str | None = None
        fix: Fix | None = None
        if update.operation in ("max", "min") and scalar in _MINMAX_TYPES:
            arguments = ", ".join([ctx.source_of(target.value), *indices, operand])
            call = f"{alias}.atomic_{update.operation}({arguments})"
        elif update.operation in ("+", "-") and scalar in _ADD_TYPES:
            call = f"{element} {update.operation}= {operand}"
        stmt = update.stmt
        simple = not isinstance(stmt, ast.If) or (len(stmt.body) == 1 and not stmt.orelse)
        if call is not None and simple:
            fix = Fix(f"Make it atomic: `{call}`", (ctx.replace(update.stmt, call),))
        axes_text = ", ".join(f"`{a}`" for a in axes)
        what = (
            f"`if ...: {element} = {operand}` compares and stores"
            if isinstance(update.stmt, ast.If)
            else f"`{ctx.source_of(update.stmt)}` reads and writes"
        )
        return self.report(
            ctx,
            update.stmt,
            f"{what} `{element}`, which does not depend on the thread index {axes_text}: every thread along "
            f"that axis updates the same element with its own value, a data race on the GPU (threads read "
            f"the same old value and the last store wins; on the CPU Warp runs them one after another)",
            kernel=kernel.name,
            expected="an atomic update",
            actual=ctx.source_of(update.stmt).splitlines()[0],
            hint=f"update it atomically: `{call}`"
            if call
            else "accumulate per thread and reduce afterwards, or index the element by every thread index",
            fix=fix,
        )


def _read_modify_write(stmt: ast.Assign) -> _Update | None:
    """``a[k] = a[k] + e``, ``a[k] = e + a[k]``, ``a[k] = a[k] - e``, ``a[k] = wp.max(a[k], e)``."""
    if len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Subscript):
        return None
    target = stmt.targets[0]
    value = stmt.value
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add | ast.Sub):
        op = "+" if isinstance(value.op, ast.Add) else "-"
        if _same(value.left, target):
            return _Update(stmt, target, op, value.right)
        if op == "+" and _same(value.right, target):
            return _Update(stmt, target, op, value.left)
        return None
    if isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords:
        func = value.func
        name = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        )
        if name in ("max", "min"):
            first, second = value.args
            if _same(first, target):
                return _Update(stmt, target, name, second)
            if _same(second, target):
                return _Update(stmt, target, name, first)
    return None


def _compare_store(stmt: ast.If) -> _Update | None:
    """``if v > a[k]: a[k] = v`` (and the other orders of the comparison)."""
    found = compare_then_store(stmt)
    return None if found is None else _Update(stmt, found.target, found.operation, found.value)


def _dependencies(kernel: KernelDef, tids: set[str]) -> dict[str, set[str]]:
    """The thread indices each local may depend on (flow-insensitively, through every assignment)."""
    edges: dict[str, set[str]] = {}
    for node in walk(kernel.node):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            sources = _names(node.value)
            for target in targets:
                for n in walk(target):
                    if isinstance(n, ast.Name) and n.id not in tids:
                        edges.setdefault(n.id, set()).update(sources)
        elif isinstance(node, ast.For):
            for n in walk(node.target):
                if isinstance(n, ast.Name):
                    edges.setdefault(n.id, set()).update(_names(node.iter))
    depends: dict[str, set[str]] = {name: {name} for name in tids}
    for name in edges:
        depends.setdefault(name, set())
    changed = True
    while changed:
        changed = False
        for name, sources in edges.items():
            found = set().union(*(depends.get(s, set()) for s in sources)) & tids
            if not found <= depends[name]:
                depends[name] |= found
                changed = True
    return depends


class _Dependencies:
    """`_dependencies` of a kernel, worked out when first asked (most kernels never need it)."""

    def __init__(self, kernel: KernelDef, tids: set[str]) -> None:
        self._kernel = kernel
        self._tids = tids
        self._found: dict[str, set[str]] | None = None

    def of(self, name: str) -> set[str]:
        if self._found is None:
            self._found = _dependencies(self._kernel, self._tids)
        return self._found.get(name, set())


def _reaches(condition: ast.expr, dropped: set[str], depends: _Dependencies) -> bool:
    return any(depends.of(name) & dropped for name in _names(condition))


def _plain_tid_names(target: ast.Subscript, tids: dict[str, int], params: Mapping[str, object]) -> set[str]:
    """The thread indices of an element indexed only by thread indices, constants and scalar parameters
    (empty for any other element: a local or a loaded index is WH010's)."""
    used: set[str] = set()
    for n in walk(target.slice):
        if isinstance(n, ast.Name):
            if n.id in tids:
                used.add(n.id)
            elif n.id not in params or isinstance(params[n.id], Array):
                return set()
        elif isinstance(n, ast.Subscript | ast.Call | ast.Attribute):
            return set()
    return used


def _one_thread(node: ast.AST, tids: dict[str, int]) -> bool:
    """``tid == 0`` (or ``0 == tid``): a condition one thread passes."""
    if not isinstance(node, ast.Compare) or len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq):
        return False
    left, right = node.left, node.comparators[0]
    for a, b in ((left, right), (right, left)):
        if (
            isinstance(a, ast.Name)
            and a.id in tids
            and isinstance(b, ast.Constant)
            and isinstance(b.value, int)
        ):
            return True
    return False


def _uniform_index(target: ast.Subscript, params: Mapping[str, object]) -> bool:
    """An element the same in every thread: indexed by constants and scalar parameters only."""
    for n in walk(target.slice):
        if isinstance(n, ast.Name):
            if n.id not in params or isinstance(params[n.id], Array):
                return False
        elif isinstance(n, ast.Subscript | ast.Call | ast.Attribute):
            return False
    return True
