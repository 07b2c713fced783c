"""## WH047 launch-tiled-without-tiles

`wp.launch_tiled` launches a kernel that uses no tile operation (no `wp.tile_*` call, in the kernel
or the `@wp.func`s of the file it calls) and unpacks from `wp.tid()` only the launch's own
dimensions, not the block's lane.

### Why it matters
`launch_tiled` adds a dimension of `block_dim` threads to the launch, meant to cooperate on tiles.
A kernel with no tile operation runs its whole body once per thread of the block: `block_dim` times
the work, and every one of those threads writes the same elements (a race when the writes are
read-modify-write). The CPU forces `block_dim=1`, so the result there is right and the mistake only
shows on a GPU (mujoco_warp's `_actuator_velocity`, google-deepmind/mujoco_warp#1246). A kernel that
reads the lane (`i, lane = wp.tid()` for a 1-D `dim`) is taken as deliberate and is not reported.

The fix launches it with `wp.launch` (offered, not applied by `check --fix`).

### Bad
```python
@wp.kernel
def velocity(qvel: wp.array(dtype=float), moment: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = moment[i] * qvel[i]


def run(qvel, moment, out, n):
    wp.launch_tiled(velocity, dim=n, inputs=[qvel, moment, out], block_dim=32)
```

### Good
```python
@wp.kernel
def velocity(qvel: wp.array(dtype=float), moment: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = moment[i] * qvel[i]


def run(qvel, moment, out, n):
    wp.launch(velocity, dim=n, inputs=[qvel, moment, out])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.inference import thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launch_dims import dim_rank
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel
from warp_harness.model.shapes import argument_ranks, param_ranks
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import deferred_launch, kernel_model, launch_kernel

# builtins that make a kernel cooperative without a `tile_` name
_COOPERATIVE = frozenset({"untile", "block_dim"})


def _uses_tiles(model: ModuleModel, kernel: KernelDef) -> bool | None:
    """Whether ``kernel`` or a ``@wp.func`` it calls uses a tile builtin; None when it calls something the
    checker cannot see into (a function of another module, a method)."""
    funcs = model.funcs
    warp_name = model.imports.warp_name
    seen = {kernel.name}
    stack = [kernel]
    while stack:
        current = stack.pop()
        for call in body_index(current.node).of(ast.Call):
            name = warp_name(call.func)
            if name is not None:
                if name.startswith("tile") or name in _COOPERATIVE:
                    return True
                continue
            func = call.func
            if isinstance(func, ast.Name) and func.id in funcs:
                if func.id not in seen:
                    seen.add(func.id)
                    stack.append(funcs[func.id])
            elif not (
                isinstance(func, ast.Name) and func.id in {"range", "min", "max", "abs", "int", "float"}
            ):
                return None
    return False


class LaunchTiledWithoutTiles(Rule):
    id = "WH047"
    name = "launch-tiled-without-tiles"
    summary = "`wp.launch_tiled` of a kernel with no tile operation: each of the block's threads runs it all"
    severity = Severity.WARNING
    priority = 55
    fixable = True

    scope = Scope.LAUNCH
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.KERNELS, Fact.FUNCS, Fact.SCOPES})

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterator[Record]:
        if not site.tiled or deferred_launch(site):
            return
        kernel = launch_kernel(ctx, site)
        if kernel is None:
            return
        model = kernel_model(ctx, kernel)
        if _uses_tiles(model, kernel) is not False:
            return
        imports = ctx.imports
        unpacks = thread_indices(kernel, model.imports).tid_unpacks
        widest = max((count for _, count in unpacks), default=0)
        if widest > 1:
            ranks = argument_ranks(site, param_ranks(kernel))
            rank = dim_rank(site, ctx.constants.values, imports, ranks)
            if rank is None or widest > rank:
                return  # the kernel may read the block's lane: a deliberate cooperative launch
        func = site.node.func
        fix = None
        if isinstance(func, ast.Attribute) and func.attr == "launch_tiled":
            fix = Fix(
                "Launch with `launch`",
                (ctx.replace(func, f"{ctx.source_of(func.value)}.launch"),),
                safe=False,
            )
        yield self.report(
            ctx,
            func,
            f"`launch_tiled` launches `{kernel.name}`, which uses no tile operation: on a GPU each of the "
            "block's `block_dim` threads runs the whole kernel and writes the same elements",
            kernel=kernel.name,
            expected="`wp.launch` (or tile operations in the kernel)",
            actual="`wp.launch_tiled` of a kernel without tiles",
            hint="launch it with `wp.launch`; keep `launch_tiled` for kernels whose threads cooperate on "
            "tiles",
            fix=fix,
        )
