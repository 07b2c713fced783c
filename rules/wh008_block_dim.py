"""## WH008 block-dim

The `block_dim` of a `wp.launch` / `wp.launch_tiled` (folded from literals and constants) is
larger than the target's maximum number of threads per block (error), or is not a multiple of
the target's warp size (warning; never on the `cpu` target, whose warp size is 1). Blocks
smaller than one warp (`block_dim=8` for a tiny tile) are taken as deliberate. The warning
needs the launched kernel to be defined in the same file, and is not given for kernels built
around `wp.tile_fft` / `wp.tile_ifft`, whose thread count cuFFTDx sets (e.g. 8 threads for a
32-point FFT).

Values that cannot be folded to a constant, and non-positive values (which select Warp's
default), are not reported.

### Why it matters
A CUDA block holds at most 1024 threads: the driver refuses a larger `block_dim` and Warp raises
`RuntimeError: Error launching kernel: ... Warp CUDA error` (Warp's own test suite checks this
with `block_dim=2048`); on the CPU Warp raises
`ValueError: block_dim must be at most 1024 on CPU, got 2048` when the launch runs, after the
module has been built. A block that is not a whole number of warps leaves the last warp partly
idle in every block, and tile operations are split over warps: a multiple of 32 keeps every
lane busy.

### Bad
```python
wp.launch_tiled(reduce, dim=[n], inputs=[x, out], block_dim=2048)
wp.launch_tiled(reduce, dim=[n], inputs=[x, out], block_dim=100)
```

### Good
```python
wp.launch_tiled(reduce, dim=[n], inputs=[x, out], block_dim=256)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.launches import LaunchSite
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import launch_kernel, uses_warp_builtin

# tile operations whose library (cuFFTDx) sets the thread count per FFT: small, odd blocks are by design
_LIBRARY_SIZED = {"tile_fft", "tile_ifft"}


class BlockDim(Rule):
    id = "WH008"
    name = "block-dim"
    summary = "block_dim above the target's threads-per-block limit, or not a multiple of the warp size"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.LAUNCH
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.KERNELS, Fact.FUNCS, Fact.SCOPES})

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterator[Record]:
        profile = ctx.profile
        limit = profile.max_threads_per_block
        warp = profile.warp_size
        node = site.block_dim
        if node is None:
            return
        value = site.fold(node, ctx.constants.values, ctx.imports)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            return
        kernel = site.kernel_name
        literal = isinstance(node, ast.Constant)
        if limit > 0 and value > limit:
            suggestion = limit - limit % warp if warp > 1 else limit
            fix = (
                Fix(f"Set block_dim = {suggestion}", (ctx.replace(node, str(suggestion)),), safe=False)
                if literal
                else None
            )
            yield self.report(
                ctx,
                node,
                f"block_dim = {value} exceeds the {limit} threads per block of target `{profile.name}`"
                + (
                    " (Warp: `block_dim must be at most 1024 on CPU`)"
                    if not profile.is_cuda
                    else " (Warp: `Error launching kernel: ... Warp CUDA error`)"
                ),
                kernel=kernel,
                expected=f"<= {limit}",
                actual=value,
                hint=f"lower block_dim to at most {limit}"
                + (f", e.g. {suggestion}" if suggestion != limit else "")
                + ("" if literal else f" where `{ctx.source_of(node)}` is defined")
                + "; check tile shapes that depend on it",
                fix=fix,
            )
        elif warp > 1 and value > warp and value % warp and self._warp_multiple_expected(ctx, site):
            up = value + warp - value % warp
            suggestion = up if up <= limit or limit <= 0 else value - value % warp
            if suggestion <= 0:
                suggestion = warp
            fix = (
                Fix(f"Set block_dim = {suggestion}", (ctx.replace(node, str(suggestion)),), safe=False)
                if literal
                else None
            )
            yield self.report(
                ctx,
                node,
                f"block_dim = {value} is not a multiple of the warp size ({warp}) of target "
                f"`{profile.name}`: the last warp of every block runs {value % warp} of {warp} lanes",
                kernel=kernel,
                expected=f"a multiple of {warp}",
                actual=value,
                hint=f"use a multiple of {warp}, e.g. {suggestion}"
                + ("" if literal else f" (where `{ctx.source_of(node)}` is defined)"),
                fix=fix,
                severity=Severity.WARNING,
            )

    def _warp_multiple_expected(self, ctx: RuleContext, site: LaunchSite) -> bool:
        """The warning needs the kernel: one built around cuFFTDx picks its own thread count."""
        kernel = launch_kernel(ctx, site)
        return kernel is not None and not uses_warp_builtin(ctx, kernel, _LIBRARY_SIZED)
