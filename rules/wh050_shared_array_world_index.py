"""## WH050 shared-array-world-index

A kernel reads an array at a thread index (a world id, `worldid, i = wp.tid()`) along an axis that
holds fewer entries than the launch has threads, because the array is shared by all worlds:

- the kernel says so itself: it computes the batched index `worldid % a.shape[0]` somewhere, and
  then reads `a[worldid, ...]` with the raw id (mujoco_warp's `qpos0`, `actuator_gear`,
  `actuator_actrange`: google-deepmind/mujoco_warp#932, #807, #819);
- or the launch says so: the array passed for the parameter holds one entry along that axis
  (`wp.zeros((1, n))`, `wp.array(np.array([[0.0, 0.0, -9.81]]), dtype=wp.vec3)`), while the launch's dim
  along the thread index's axis is larger (google-deepmind/mujoco_warp#821).

An error when the launch shows a single entry against a constant dim larger than one, a warning when
the evidence is the kernel's own batched index or a dim the checker cannot fold (`nworld`). A read
behind any condition that looks at the index, or at the array, is left alone. The fix reads through
the batched index (the kernel's own local when it has one): `worldid % a.shape[0]` is `worldid`
whenever the array is batched per world, so the fix changes nothing where the code was right.

### Why it matters
Every world but the first reads past the end of the shared array. Warp does not check bounds in
release builds: on the CPU the read returns whatever lies behind the array, on a GPU another
allocation's values or an illegal-address fault. Debug mode (`wp.config.mode = "debug"`) stops it:
`Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'`.

### Bad
```python
@wp.kernel
def transmission(gear: wp.array2d(dtype=float), qpos: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    gear_id = worldid % gear.shape[0]
    out[worldid, actid] = gear[worldid, actid] * qpos[worldid, actid]
```

### Good
```python
@wp.kernel
def transmission(gear: wp.array2d(dtype=float), qpos: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    worldid, actid = wp.tid()
    gear_id = worldid % gear.shape[0]
    out[worldid, actid] = gear[gear_id, actid] * qpos[worldid, actid]
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.inference import thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.shapes import Cover, compare
from warp_harness.model.thread_accesses import (
    LaunchShapes,
    ThreadAccess,
    batched_indices,
    batched_names,
    subscript_indices,
    thread_accesses,
    unguarded,
)
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import kernel_launch_shapes


class SharedArrayWorldIndex(Rule):
    id = "WH050"
    name = "shared-array-world-index"
    summary = "an array shared by all worlds (one entry along an axis) read at the world id: past its end"
    severity = Severity.WARNING
    # above WH011 (60): on the same read, this one says why and fixes it
    priority = 65
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.KERNELS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        tids = thread_indices(kernel, ctx.imports)
        accesses = [a for a in thread_accesses(kernel, tids) if a.offset == 0 and not a.write]
        if not accesses:
            return
        batched = batched_indices(kernel, tids)
        locals_of = batched_names(kernel, batched) if batched else {}
        launches: list[LaunchShapes] | None = None
        for access in accesses:
            if not unguarded(kernel, ctx.imports, access):
                continue
            own = batched.get((access.tid, access.array, access.position))
            if launches is None:
                launches = self._launches(ctx, kernel)
            shown = self._launch_evidence(kernel, access, launches)
            if own is None and shown is None:
                continue
            yield self._record(ctx, kernel, access, own, locals_of, shown)

    def _launches(self, ctx: RuleContext, kernel: KernelDef) -> list[LaunchShapes]:
        return kernel_launch_shapes(ctx, kernel, thread_indices(kernel, ctx.imports))

    def _launch_evidence(
        self, kernel: KernelDef, access: ThreadAccess, launches: list[LaunchShapes]
    ) -> tuple[LaunchShapes, int | None] | None:
        """The launch passing one entry along the axis, with its dim along the index's axis (None when it
        does not fold); a constant dim above one first."""
        best: tuple[LaunchShapes, int | None] | None = None
        for shapes in launches:
            if access.tid_axis >= shapes.rank:
                continue
            env = shapes.env
            arg = shapes.argument(kernel, access.array)
            if env.known_extent(arg, access.position) != 1:
                continue
            # every spelling of the dim: as written, and the extents of the array it is read off
            dims = [d for d in [env.dim_value(access.tid_axis)] if d is not None]
            source = env.dim_source(access.tid_axis)
            if source is not None:
                dims += env.extents(*source)
            extents = env.extents(arg, access.position)
            if any(compare(d, e).cover in (Cover.EXACT, Cover.WITHIN) for d in dims for e in extents):
                continue  # the dim is the array's own extent (`dim=a.shape`) or no larger
            count = next(
                (int(d.low.const) for d in dims if d.low.is_constant and not d.slack and d.low.const > 1),
                None,
            )
            if count is not None:
                return shapes, count
            if best is None:
                best = (shapes, None)
        return best

    def _record(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        access: ThreadAccess,
        own: ast.BinOp | None,
        locals_of: dict[int, str],
        shown: tuple[LaunchShapes, int | None] | None,
    ) -> Record:
        array, tid, axis = access.array, access.tid, access.position
        element = ctx.source_of(access.node)
        batched_text = f"{tid} % {array}.shape[{axis}]"
        related: list[Related] = []
        severity = Severity.WARNING
        if shown is not None:
            shapes, count = shown
            arg_text = ctx.source_of(shapes.argument(kernel, array))
            passed = f"`{arg_text}`" if arg_text == array else f"`{arg_text}`, passed for `{array}`,"
            runs = f"{count} values of `{tid}`" if count is not None else f"as many `{tid}` as its dim says"
            related.append(
                Related(
                    ctx.location(shapes.site.node, kernel.name),
                    f"{passed} holds one entry along axis {axis}; the launch runs {runs}",
                )
            )
            why = (
                f"the launch passes an array shared by all worlds (one entry along axis {axis}) and runs "
                + (
                    f"{count} values of `{tid}`"
                    if count is not None
                    else f"more than one `{tid}` unless it is 1"
                )
            )
            if count is not None:
                severity = Severity.ERROR
        else:
            assert own is not None
            why = (
                f"the kernel itself computes `{batched_text}`, so `{array}` may hold fewer entries than "
                f"there are values of `{tid}` (an array shared by all worlds, shape `(1, n)`)"
            )
        if own is not None:
            related.append(Related(ctx.location(own, kernel.name), f"the batched index `{batched_text}`"))
        replacement = locals_of.get(id(own)) if own is not None else None
        index_node = subscript_indices(access.node)[axis]
        new_text = replacement or batched_text
        fix = Fix(f"Read `{array}` at `{new_text}`", (ctx.replace(index_node, new_text),))
        return self.report(
            ctx,
            access.node,
            f"`{element}` reads `{array}` at the raw `{tid}` along axis {axis}, but {why}: every `{tid}` "
            f"past `{array}.shape[{axis}] - 1` reads past its end",
            kernel=kernel.name,
            expected=f"`{array}[...]` at `{new_text}`",
            actual=f"`{array}[...]` at `{tid}`",
            hint=f"read it at `{new_text}` (the same index whenever `{array}` is batched per world)",
            fix=fix,
            related=related,
            severity=severity,
        )
