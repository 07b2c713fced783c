"""## WH054 unbounded-range-walk

A `while` loop walks a run of entries in an array (`start + k` with `k += 1`, the run of equal keys a
binary search found in a sorted array) and stops only on what it reads: its condition compares the
entry it read (`while key == old_key`, `old_key = keys[start + k]`), and nothing in the loop compares
the walking index with a length (`start + k >= n`, `k < count`) or clamps it. When the run reaches the
last entry, the loop reads the one past the end, and stops only if that stray value happens to differ
(newton's warm-start lookup by contact key: newton-physics/newton#3641).

Reported once per loop, at the read that walks, as a warning: whether the run reaches the end depends
on the data. A comparison of the index (or a value computed from it in the loop) with anything,
`wp.min`/`wp.clamp`/`%` in the index, and loops that do not read what they test are left alone.

### Why it matters
Release builds do not check bounds: the read past the end returns whatever lies behind the array (on
a GPU another allocation's values, or an illegal-address fault), and when it happens to equal the key
the loop adds a stray value and walks on. Debug mode (`wp.config.mode = "debug"`) stops it with
`Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'`.

### Bad
```python
@wp.kernel
def sum_run(keys: wp.array(dtype=int), values: wp.array(dtype=float), start: int, out: wp.array(dtype=float)):
    key = keys[start]
    k = int(0)
    total = float(0.0)
    current = key
    while current == key:
        total += values[start + k]
        k += 1
        current = keys[start + k]
    out[0] = total
```

### Good
```python
@wp.kernel
def sum_run(keys: wp.array(dtype=int), values: wp.array(dtype=float), start: int, out: wp.array(dtype=float)):
    key = keys[start]
    k = int(0)
    total = float(0.0)
    current = key
    while current == key:
        total += values[start + k]
        k += 1
        if start + k >= keys.shape[0]:
            break
        current = keys[start + k]
    out[0] = total
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import Array
from warp_harness.model.walk import walk
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_CLAMPS = {"min", "max", "clamp"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _step(node: ast.AST) -> str | None:
    """The name ``node`` steps by a positive constant (``k += 1``, ``k = k + 1``), if it does."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
        value = node.value
        if isinstance(value, ast.Constant) and type(value.value) is int and value.value > 0:
            return node.target.id
    elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        name, value = node.targets[0].id, node.value
        if (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Add)
            and isinstance(value.left, ast.Name)
            and value.left.id == name
            and isinstance(value.right, ast.Constant)
            and type(value.right.value) is int
            and value.right.value > 0
        ):
            return name
    return None


def _derived(assigns: list[ast.Assign], seeds: set[str]) -> set[str]:
    """``seeds`` and the names ``assigns`` compute from them (directly or not)."""
    found = set(seeds)
    edges = [
        (_names(a.value), {n.id for t in a.targets for n in ast.walk(t) if isinstance(n, ast.Name)})
        for a in assigns
    ]
    changed = True
    while changed:
        changed = False
        for sources, stored in edges:
            if not stored <= found and not sources.isdisjoint(found):
                found |= stored
                changed = True
    return found


def _bounded(tests: list[ast.expr], walking: set[str]) -> bool:
    """Whether one of ``tests`` orders a walking name (``start + k >= n``, ``k < count``)."""
    for test in tests:
        for node in ast.walk(test):
            if isinstance(node, ast.Compare) and any(isinstance(op, _ORDERINGS) for op in node.ops):
                if not _names(node).isdisjoint(walking):
                    return True
    return False


def _clamped(index: ast.expr) -> bool:
    for node in ast.walk(index):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in _CLAMPS:
                return True
    return False


class UnboundedRangeWalk(Rule):
    id = "WH054"
    name = "unbounded-range-walk"
    summary = (
        "a `while` loop walks an array until the value changes, never checking the index against its end"
    )
    severity = Severity.WARNING
    priority = 55

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
        if not arrays:
            return
        for loop in body_index(kernel.node).of(ast.While):
            record = self._check_loop(ctx, kernel, loop, arrays)
            if record is not None:
                yield record

    def _check_loop(
        self, ctx: RuleContext, kernel: KernelDef, loop: ast.While, arrays: set[str]
    ) -> Record | None:
        nodes = walk(loop)
        counters = {name for name in map(_step, nodes) if name is not None}
        if not counters:
            return None
        assigns = [n for n in nodes if isinstance(n, ast.Assign)]
        walking = _derived(assigns, counters)
        # reads of an array parameter at an index that walks
        reads = [
            sub
            for sub in nodes
            if isinstance(sub, ast.Subscript)
            and isinstance(sub.ctx, ast.Load)
            and isinstance(sub.value, ast.Name)
            and sub.value.id in arrays
            and not _names(sub.slice).isdisjoint(walking)
            and not _clamped(sub.slice)
        ]
        if not reads:
            return None
        # the loop stops on what it read: its condition looks at a walking read (or a name assigned from one)
        read_ids = {id(r) for r in reads}
        from_reads = {
            n.id
            for assign in assigns
            if any(id(s) in read_ids for s in ast.walk(assign.value))
            for t in assign.targets
            for n in ast.walk(t)
            if isinstance(n, ast.Name)
        }
        test_reads = any(id(s) in read_ids for s in ast.walk(loop.test))
        if not test_reads and _names(loop.test).isdisjoint(from_reads):
            return None
        tests = [loop.test, *(n.test for n in nodes if isinstance(n, ast.If | ast.IfExp | ast.While))]
        if _bounded(tests, walking):
            return None
        first = min(reads, key=lambda r: (r.lineno, r.col_offset))
        assert isinstance(first.value, ast.Name)
        array = first.value.id
        counter = sorted(counters)[0]
        return self.report(
            ctx,
            first,
            f"`{ctx.source_of(first)}` walks `{array}` (`{counter}` grows each pass) in a loop that "
            f"stops only on the value it reads, and nothing compares the index with the array's length: "
            f"a run that reaches the last entry reads past the end",
            kernel=kernel.name,
            expected="a check of the walking index against the number of entries",
            actual="no bound on the walking index",
            hint=f"break out of the loop when the index reaches the end (`if ... >= {array}.shape[0]: "
            f"break`, or against the count of active entries) before reading",
            related=[Related(ctx.location(loop, kernel.name, loop.test), "the loop")],
        )
