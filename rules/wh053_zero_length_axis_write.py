"""## WH053 zero-length-axis-write

A kernel writes into an array that the launch passes with a zero-length axis (`wp.zeros(shape=(nworld,
0))`, `wp.empty((0, 3))`, `wp.zeros(0)`), outside any `if`, `while` or loop, while the launch's dim is
a constant that runs threads. An array of zero elements has no element to write, whatever the index:
every thread that reaches the store writes out of bounds. Real code allocates such arrays for a
feature that is switched off (mujoco_warp's sparse-Jacobian row arrays have shape `(nworld, 0)` in
the dense configuration) and a kernel that forgets to skip its stores then corrupts memory
(google-deepmind/mujoco_warp#1186: "CUDA illegal memory access" on the cloth benchmark).

An error when nothing before the store can end the thread early, a warning when an early `return`,
`break` or `continue` comes first. A store in a branch Warp drops (`if wp.static(SPARSE):` with
`SPARSE` false) is not compiled and is left alone, and so is a launch whose dim the checker cannot fold.

### Why it matters
Release builds do not check bounds: on the CPU a write past the end of a zero-size allocation
corrupts the heap, on a GPU it faults with an illegal address or silently overwrites another
allocation. Debug mode (`wp.config.mode = "debug"`) stops it with
`Assertion failed: 'j >= -arr.shape[1] && j < arr.shape[1]'`.

### Bad
```python
@wp.kernel
def rows(nnz: wp.array(dtype=int), rownnz_out: wp.array2d(dtype=int), count_out: wp.array2d(dtype=int)):
    worldid, rowid = wp.tid()
    count_out[worldid, rowid] = 1
    rownnz_out[worldid, rowid] = nnz[rowid]

nnz = wp.zeros(4, dtype=int)
rownnz = wp.zeros(shape=(2, 0), dtype=int)
count = wp.zeros((2, 4), dtype=int)
wp.launch(rows, dim=(2, 4), inputs=[nnz, rownnz, count])
```

### Good
```python
SPARSE = False


@wp.kernel
def rows(nnz: wp.array(dtype=int), rownnz_out: wp.array2d(dtype=int), count_out: wp.array2d(dtype=int)):
    worldid, rowid = wp.tid()
    count_out[worldid, rowid] = 1
    if wp.static(SPARSE):
        rownnz_out[worldid, rowid] = nnz[rowid]

nnz = wp.zeros(4, dtype=int)
rownnz = wp.zeros(shape=(2, 0), dtype=int)
count = wp.zeros((2, 4), dtype=int)
wp.launch(rows, dim=(2, 4), inputs=[nnz, rownnz, count])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.inference import thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.thread_accesses import LaunchShapes, stored_once
from warp_harness.model.types import Array
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import kernel_launch_shapes

_ATOMICS = {
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
_EXITS = (ast.Return, ast.Break, ast.Continue)


def _stores(ctx: RuleContext, stmt: ast.stmt, arrays: set[str]) -> list[tuple[str, ast.expr]]:
    """(array, node) for each store into one of ``arrays`` in ``stmt`` itself: an assignment's subscript
    target, or an atomic builtin on the array."""
    found: list[tuple[str, ast.expr]] = []
    if not isinstance(stmt, ast.Assign | ast.AugAssign | ast.Expr):
        return found  # a block: its stores run only on some paths
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, ast.AugAssign):
        targets = [stmt.target]
    for target in targets:
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            if target.value.id in arrays:
                found.append((target.value.id, target))
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            if node.args[0].id in arrays and ctx.imports.warp_name(node.func) in _ATOMICS:
                found.append((node.args[0].id, node))
    return found


def _exit_lines(kernel: ast.FunctionDef) -> list[int]:
    """The lines of the kernel's ``return``, ``break`` and ``continue`` statements (Warp compiles them)."""
    index = body_index(kernel)
    return sorted(node.lineno for kind in _EXITS for node in index.of(kind))


class ZeroLengthAxisWrite(Rule):
    id = "WH053"
    name = "zero-length-axis-write"
    summary = "a store into an array the launch passes with a zero-length axis: out of bounds for any index"
    severity = Severity.ERROR
    priority = 60

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.KERNELS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        params = {p.name: p for p in kernel.params if isinstance(p.type, Array) and p.type.kind == "array"}
        if not params:
            return
        tids = thread_indices(kernel, ctx.imports)
        # (launch, array, axis) for each array a launch that runs passes with a zero-length axis
        empty: list[tuple[LaunchShapes, str, int]] = []
        for shapes in kernel_launch_shapes(ctx, kernel, tids):
            if not self._runs(shapes):
                continue
            for name, param in params.items():
                assert isinstance(param.type, Array)
                arg = shapes.argument(kernel, name)
                axis = next((k for k in range(param.type.ndim) if shapes.env.known_extent(arg, k) == 0), None)
                if axis is not None:
                    empty.append((shapes, name, axis))
        if not empty:
            return
        arrays = stored_once(kernel.node, {name for _, name, _ in empty})
        exits = _exit_lines(kernel.node)
        # the kernel's top-level statements every thread runs unless it left earlier
        stores = [
            (array, node, bool(exits) and exits[0] < stmt.lineno)
            for stmt in kernel.node.body
            for array, node in _stores(ctx, stmt, arrays)
        ]
        reported: set[str] = set()
        for array, node, exited in stores:
            found = next(((shapes, axis) for shapes, name, axis in empty if name == array), None)
            if array in reported or found is None:
                continue
            reported.add(array)
            shapes, axis = found
            arg_text = ctx.source_of(shapes.argument(kernel, array))
            yield self.report(
                ctx,
                node,
                f"`{ctx.source_of(node)}` stores into `{array}`, but the launch passes `{arg_text}` with "
                f"no element along axis {axis}: each thread reaching this store writes out of bounds",
                kernel=kernel.name,
                expected=f"no store into `{array}` when `{array}.shape[{axis}]` is 0",
                actual=f"an unconditional store into an array of shape[{axis}] == 0",
                hint=f"skip the store when the feature that sizes `{array}` is off (`if wp.static(...)`, "
                f"or `if {array}.shape[{axis}] > 0:`), or allocate it with its full extent",
                related=[
                    Related(
                        ctx.location(shapes.site.node, kernel.name),
                        f"launched here with `{arg_text}` (shape[{axis}] == 0) for `{array}`",
                    )
                ],
                severity=Severity.WARNING if exited else None,
            )

    @staticmethod
    def _runs(shapes: LaunchShapes) -> bool:
        """Every axis of the dim is a constant above zero: the kernel runs."""
        for axis in range(shapes.rank):
            dim = shapes.env.dim_value(axis)
            if dim is None or not dim.low.is_constant or dim.slack or dim.low.const < 1:
                return False
        return True
