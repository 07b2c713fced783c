"""## WH052 offset-index-past-end

A kernel reads or writes an array at the thread index plus a constant (`b[i + 2]`, `x[i + 1]`), with no
guard, and the launch's dim plus that offset is provably larger than the array's extent along the
axis: `dim=n` against an array of `n` elements read at `i + 1`, `dim=3` against 4 elements read at
`i + 2` (NVIDIA/warp#667). The spellings of dims and extents are those of WH011
(`warp_harness.model.shapes`): literal and folded numbers, `a.shape[k]`, `len(a)`, allocations in the
launching function or the class. A launch of `n - 1` threads over `x[i + 1]` (the usual
forward-difference shape) is in bounds and stays quiet, and so does any access behind a condition that
looks at the index, a value computed from it, or the array.

An error when the excess is certain, a warning when the dim is rounded up to whole blocks.

The same off-by-one in a guard is a warning: `if i > count: return` at the top of a kernel, where
`count` is a length (`a.shape[0]`) or a count read from an array named like one (`nefc[worldid]`,
`contact_count[0]`), followed by an access at `i`, lets the thread at `i == count` through: it
reads a stale entry past the active range, or one past the end when the count is the array's length
(google-deepmind/mujoco_warp@0934504). The fix compares with `>=` (offered, not applied by
`check --fix`: a count that is really a last index would be off by one the other way).

### Why it matters
The last threads read or write past the end of the array. Warp does not check bounds in release
builds: the read returns whatever lies behind the array (in NVIDIA/warp#667, `a[i] += b[i + 2]` over
three threads added garbage to the last element without a word), a write corrupts the next
allocation. Debug mode stops it: `Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'`.

### Bad
```python
@wp.kernel
def add(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    a[i] += b[i + 2]

a = wp.zeros(3, dtype=float)
b = wp.zeros(4, dtype=float)
wp.launch(add, dim=3, inputs=[a, b])
```

### Good
```python
@wp.kernel
def add(a: wp.array(dtype=float), b: wp.array(dtype=float)):
    i = wp.tid()
    a[i] += b[i + 1]

a = wp.zeros(3, dtype=float)
b = wp.zeros(4, dtype=float)
wp.launch(add, dim=3, inputs=[a, b])
```
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from warp_harness.model.constants import Linear
from warp_harness.model.inference import ThreadIndices, thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.shapes import Comparison, Cover, Extent, compare, extent_text
from warp_harness.model.thread_accesses import LaunchShapes, ThreadAccess, unguarded
from warp_harness.model.thread_accesses import thread_accesses as kernel_accesses
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import kernel_launch_shapes

# names that say an integer counts entries (`nefc`, `ncon`, `contact_count`, `num_active`)
_COUNT_NAME = re.compile(r"^n[a-z]|count|^num_|_num\b|^len_|length")


def _count_array(bound: ast.expr) -> str | None:
    """The array ``bound`` reads a count or length from: ``a.shape[k]`` (``a``), or an element of an array
    named like a count (``nefc_in[worldid]``: ``nefc_in``); None for anything else."""
    if not isinstance(bound, ast.Subscript):
        return None
    value = bound.value
    if isinstance(value, ast.Attribute) and value.attr == "shape" and isinstance(value.value, ast.Name):
        return value.value.id
    if isinstance(value, ast.Name) and _COUNT_NAME.search(value.id):
        return value.id
    return None


class OffsetIndexPastEnd(Rule):
    id = "WH052"
    name = "offset-index-past-end"
    summary = (
        "`a[i + c]` past the array's extent at the launch, or a guard `i > count` that lets `i == count` in"
    )
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.KERNELS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        tids = thread_indices(kernel, ctx.imports)
        yield from self._inclusive_guards(ctx, kernel, tids)
        accesses = [a for a in kernel_accesses(kernel, tids) if a.offset > 0]
        if not accesses:
            return
        launches = kernel_launch_shapes(ctx, kernel, tids)
        if not launches:
            return
        for access in accesses:
            if not unguarded(kernel, ctx.imports, access):
                continue
            for shapes in launches:
                record = self._check(ctx, kernel, access, shapes)
                if record is not None:
                    yield record
                    break

    def _inclusive_guards(self, ctx: RuleContext, kernel: KernelDef, tids: ThreadIndices) -> Iterator[Record]:
        """``if i > count: return`` at the top of the kernel, ``count`` a length (``a.shape[k]``) or a count
        read from an array (``nefc[worldid]``), followed by an access at ``i``: the thread at ``i == count``
        passes the guard."""
        accesses = kernel_accesses(kernel, tids)
        for stmt in kernel.node.body:
            if not (
                isinstance(stmt, ast.If)
                and not stmt.orelse
                and len(stmt.body) == 1
                and isinstance(stmt.body[0], ast.Return)
                and isinstance(stmt.test, ast.Compare)
                and len(stmt.test.ops) == 1
                and isinstance(stmt.test.ops[0], ast.Gt)
                and isinstance(stmt.test.left, ast.Name)
                and stmt.test.left.id in tids.tid_vars
            ):
                continue
            tid, bound = stmt.test.left.id, stmt.test.comparators[0]
            counted = _count_array(bound)
            if counted is None:
                continue
            end = stmt.end_lineno or stmt.lineno
            later = [
                a
                for a in accesses
                if a.tid == tid and a.offset == 0 and a.array != counted and a.node.lineno > end
            ]
            if not later:
                continue
            compare_node = stmt.test
            bound_text = ctx.source_of(bound)
            element = ctx.source_of(later[0].node)
            yield self.report(
                ctx,
                compare_node,
                f"the guard `{ctx.source_of(compare_node)}` lets `{tid} == {bound_text}` through, and "
                f"`{element}` then reads or writes at `{tid}`: the thread at the count touches one entry "
                f"past the active range (stale data, or out of bounds when the count is the array's length)",
                kernel=kernel.name,
                expected=f"return when `{tid} >= {bound_text}`",
                actual=f"return when `{tid} > {bound_text}`",
                hint=f"compare with `>=`: `{bound_text}` counts entries, the last valid index is one less",
                fix=Fix(
                    "Return when the index reaches the count (`>=`)",
                    (ctx.replace(compare_node, f"{tid} >= {bound_text}"),),
                    safe=False,
                ),
                related=[
                    Related(ctx.location(later[0].node, kernel.name), "the access the guard lets through")
                ],
                severity=Severity.WARNING,
            )

    def _check(
        self, ctx: RuleContext, kernel: KernelDef, access: ThreadAccess, shapes: LaunchShapes
    ) -> Record | None:
        if access.tid_axis >= shapes.rank:
            return None
        env = shapes.env
        dim = env.dim_value(access.tid_axis)
        if dim is None:
            return None
        reach = dim + Extent(Linear(float(access.offset)))
        one = Extent(Linear(1.0))
        arg = shapes.argument(kernel, access.array)
        verdict: tuple[Comparison, Extent] | None = None
        for extent in env.extents(arg, access.position):
            comparison = compare(reach, extent)
            if comparison.cover in (Cover.EXACT, Cover.WITHIN):
                return None
            if comparison.cover in (Cover.MORE, Cover.MAYBE_MORE) and verdict is None:
                verdict = (comparison, extent)
        if verdict is None:
            return None
        comparison, extent = verdict
        certain = comparison.cover is Cover.MORE
        element = ctx.source_of(access.node)
        verb = "writes" if access.write else "reads"
        index = f"{access.tid} + {access.offset}"
        dim_text = extent_text(dim)
        past = (
            f"the last {comparison.low} value(s) of `{access.tid}` {verb[:-1]} past its end"
            if certain and comparison.low == comparison.high
            else "the last threads go past its end unless the rounded dim happens to fit"
        )
        return self.report(
            ctx,
            access.node,
            f"`{element}` {verb} `{access.array}` at `{index}` for every `{access.tid}` below `{dim_text}` "
            f"(the launch dim), up to index `{extent_text(reach - one)}`, but `{access.array}` has "
            f"`{extent_text(extent)}` element(s) along axis {access.position} and no guard looks at "
            f"`{access.tid}`: {past}",
            kernel=kernel.name,
            expected=f"{index} < {access.array}.shape[{access.position}] ({extent_text(extent)})",
            actual=f"{index} < {extent_text(reach)}",
            hint=f"return early when `{index} >= {access.array}.shape[{access.position}]`, or launch "
            f"`{access.offset}` fewer threads",
            related=[
                Related(ctx.location(shapes.site.node, kernel.name), f"launched here with dim `{dim_text}`")
            ],
            severity=None if certain else Severity.WARNING,
        )
