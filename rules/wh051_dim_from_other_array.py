"""## WH051 dim-from-other-array

A launch takes its `dim` from one array (`dim=a.shape`, `dim=len(a)`, `dim=a.shape[0]`, or a local
`n = a.shape[0]`), and the kernel indexes another array with the thread index along that axis, with no
guard, while the second array is known to hold fewer elements there: both are allocated in the
launching function (or the class) with extents the checker can compare (`wp.zeros(8)` against
`wp.zeros(4)`, `wp.zeros((n + 1, 3))` against `wp.zeros((n, 3))`).

WH011 compares a dim with the arrays the kernel indexes when the dim is spelled as a number; this
rule follows the dim to the array it was read from and to that array's own allocation. An error when
the dim is always larger, a warning when it is larger unless a divisibility holds. Any condition that
looks at the index, at a value computed from it, or at the second array keeps the rule quiet.

### Why it matters
The threads past the second array's end read or write out of bounds: a read returns the next
allocation's values, a write corrupts it (on the CPU the process may abort at exit); only debug mode
(`wp.config.mode = "debug"`) stops it, with `Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'`.
The mistake is easy to make because both arrays are "the data" at the call site (NVIDIA/warp's GMRES
took the dot product's width from the first operand and passed a longer one than the second:
NVIDIA/warp@9f8343d).

### Bad
```python
@wp.kernel
def scale(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = 2.0 * src[i]

src = wp.zeros(8, dtype=float)
dst = wp.zeros(4, dtype=float)
wp.launch(scale, dim=src.shape, inputs=[src, dst])
```

### Good
```python
@wp.kernel
def scale(src: wp.array(dtype=float), dst: wp.array(dtype=float)):
    i = wp.tid()
    dst[i] = 2.0 * src[i]

src = wp.zeros(8, dtype=float)
dst = wp.zeros(4, dtype=float)
wp.launch(scale, dim=dst.shape, inputs=[src, dst])
```
"""

from __future__ import annotations

from collections.abc import Iterator

from warp_harness.model.inference import thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.shapes import Comparison, Cover, Extent, compare, extent_text
from warp_harness.model.thread_accesses import LaunchShapes, ThreadAccess, unguarded
from warp_harness.model.thread_accesses import thread_accesses as kernel_accesses
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import kernel_launch_shapes


class DimFromOtherArray(Rule):
    id = "WH051"
    name = "dim-from-other-array"
    summary = "a launch dim read off one array indexes another that is known to be shorter along that axis"
    severity = Severity.ERROR
    priority = 60

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.KERNELS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        tids = thread_indices(kernel, ctx.imports)
        accesses = [a for a in kernel_accesses(kernel, tids) if a.offset == 0]
        if not accesses:
            return
        launches = kernel_launch_shapes(ctx, kernel, tids)
        if not launches:
            return
        reported: set[tuple[str, int]] = set()
        for access in accesses:
            key = (access.array, access.position)
            if key in reported:
                continue
            if not unguarded(kernel, ctx.imports, access):
                continue
            for shapes in launches:
                record = self._check(ctx, kernel, access, shapes)
                if record is not None:
                    reported.add(key)
                    yield record
                    break

    def _check(
        self, ctx: RuleContext, kernel: KernelDef, access: ThreadAccess, shapes: LaunchShapes
    ) -> Record | None:
        if access.tid_axis >= shapes.rank:
            return None
        env = shapes.env
        source = env.dim_source(access.tid_axis)
        if source is None:
            return None
        other, other_axis = source
        arg = shapes.argument(kernel, access.array)
        if env.shape_symbol(other, other_axis) == env.shape_symbol(arg, access.position):
            return None  # the dim is this array's own extent
        extents = env.extents(arg, access.position)
        dims = env.extents(other, other_axis)
        verdict: tuple[Comparison, Extent, Extent] | None = None
        for dim in dims:
            for extent in extents:
                comparison = compare(dim, extent)
                if comparison.cover in (Cover.EXACT, Cover.WITHIN):
                    return None  # one spelling proves the launch stays inside
                if comparison.cover in (Cover.MORE, Cover.MAYBE_MORE):
                    if verdict is None or (
                        comparison.cover is Cover.MORE and verdict[0].cover is not Cover.MORE
                    ):
                        verdict = (comparison, dim, extent)
        if verdict is None:
            return None
        comparison, dim, extent = verdict
        other_text = ctx.source_of(other)
        arg_text = ctx.source_of(arg)
        element = ctx.source_of(access.node)
        verb = "writes" if access.write else "reads"
        certain = comparison.cover is Cover.MORE
        return self.report(
            ctx,
            access.node,
            f"the launch takes dim axis {access.tid_axis} from `{other_text}` ({extent_text(dim)} elements "
            f"along axis {other_axis}), but `{element}` {verb} `{access.array}` (`{arg_text}`, "
            f"{extent_text(extent)} along axis {access.position}) at `{access.tid}` with no guard: "
            + (
                f"the last {comparison.low} value(s) of `{access.tid}` {verb[:-1]} past its end"
                if certain
                else "unless the sizes divide evenly, the last threads go past its end"
            ),
            kernel=kernel.name,
            expected=f"{access.tid} < {access.array}.shape[{access.position}] ({extent_text(extent)})",
            actual=f"{access.tid} < {other_text}.shape[{other_axis}] ({extent_text(dim)})",
            hint=f"launch with `{access.array}`'s extent, or return early when `{access.tid} >= "
            f"{access.array}.shape[{access.position}]`",
            related=[
                Related(
                    ctx.location(shapes.site.node, kernel.name),
                    f"launched here with the dim of `{other_text}`",
                )
            ],
            severity=None if certain else Severity.WARNING,
        )
