"""## WH015 tile-shared-memory

The tiles of a kernel need more shared memory than one block of the target can have, or a
register tile is so large that it cannot stay in registers.

Warp gives every tile variable that lives in shared memory its own allocation for the whole kernel
(its bytes rounded up to 16; no reuse between tiles whose lifetimes do not overlap), plus the largest
scratch of one call (a `@wp.func`'s own tiles, `tile_fft`'s cuFFTDx workspace). A tile lives in shared
memory when it is created with `storage="shared"`, when it is the result of `C = wp.tile_matmul(A, B)`,
`tile_cholesky`, a triangular solve or `tile_diag_add`, or when an operation moves it there: the operands
of `tile_matmul`, the input of `tile_transpose`, `tile_broadcast`, `tile_reshape`, `tile_view`,
`tile_squeeze`, `tile_extract`, `tile_sort`, `tile_sum`/`tile_reduce` over an axis, the Cholesky and
triangular solvers, and any tile that is indexed (`t[i, j]`) or written element-wise. A `for` loop with a
constant trip count of at most `max_unroll` (16 by default) is unrolled by Warp, and every copy of its
body gets its own tiles: a K loop of 8 steps that loads two shared tiles needs 16 of them. The model
(`warp_harness.model.shared_memory`) matches the bytes Warp's own sm_90 builds record for every tile
kernel of Warp's examples.

The request is compared with the target profile: on CUDA, the opt-in shared memory per block
minus the `4 * block_dim` bytes Warp reserves statically (`block_dim` from the kernel's launch
sites); on Warp's CPU backend, the fixed 256 KiB tile arena of each block (Warp 1.19's
`WP_MAX_CPU_SHARED`; larger requests abort the process). A kernel every launch of which passes
`device="cpu"` is judged on the CPU arena whatever the target. The rule judges what the kernel surely
allocates: tiles whose size and storage are certain, loops Warp surely unrolls, the smallest scratch
cuFFTDx may pick; a kernel built by a factory whose sizes come from the factory's default argument
is not judged (other calls may pass other values), while a factory the file calls once, passing every
size as a constant (`square = make_square(256)`), builds a kernel of exactly those sizes and is judged.
So a kernel it reports cannot fit.

On CUDA targets a register tile whose share per thread (`size / block_dim` elements) exceeds the
registers of a thread (255 x 4 bytes) is reported as a warning: it spills to local memory, and
NVRTC needed about 9 minutes to compile one 512 x 512 float32 register tile for sm_86.

### Why it matters
Warp does not check the budget when it compiles. On a GPU the launch fails with a warning about
dynamic shared memory followed by `CUDA error 1: invalid argument`; on the CPU the process dies
with `Warp CPU tile shared-memory allocation exceeds the 256 KiB arena`.

### Bad
```python
TILE = wp.constant(128)

@wp.kernel
def square(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    x = wp.tile_load(a, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
    y = wp.tile_matmul(x, x)          # x and y in shared memory: 2 x 64 KiB
    wp.tile_store(out, y, offset=(i * TILE, j * TILE))
```

### Good
```python
TILE = wp.constant(64)                # 2 x 16 KiB
```
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
from collections.abc import Callable, Iterator

from warp_harness.hardware import HardwareProfile
from warp_harness.kernel_judgements import judged
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel
from warp_harness.model.shared_memory import (
    CPU_TILE_ARENA,
    DEFAULT_BLOCK_DIM,
    Estimate,
    SharedMemoryEstimator,
    Site,
    calls_tile,
    fmt_bytes,
    max_unroll_of,
    reaches_tile,
    refold_constants,
)
from warp_harness.model.tiles import TILE_CREATORS, call_arg
from warp_harness.model.types import byte_size
from warp_harness.record import QUOTED_LINE, Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import kernel_model, launched_elsewhere, launches_of


def _literal_of(stmt: ast.Assign | ast.AnnAssign, ctx: RuleContext) -> ast.Constant | None:
    """The int literal a constant's definition holds (``64`` in ``TILE_K = wp.constant(64)``)."""
    value = stmt.value
    if (
        isinstance(value, ast.Call)
        and ctx.imports.warp_name(value.func) in ("constant", "int32")
        and len(value.args) == 1
        and not value.keywords
    ):
        value = value.args[0]
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value
    return None


def _one(block_dims: list[int] | None) -> int | None:
    """The block_dim every launch uses, None when they differ or one is unknown."""
    return block_dims[0] if block_dims and len(set(block_dims)) == 1 else None


def _limit(profile: HardwareProfile) -> int | None:
    """Bytes of shared memory one block may use (None: the target has no limit to check)."""
    if profile.device == "cpu":
        return CPU_TILE_ARENA
    return profile.shared_memory_limit if profile.is_cuda else None


def _estimate(
    model: ModuleModel,
    kernel: KernelDef,
    types: Callable[[], KernelTypes],
    max_unroll: int,
    block_dim: int | None,
    arch: int | None,
    cpu: bool,
) -> Estimate:
    """The kernel's tiles, estimated once per process for these arguments: every file launching a kernel
    of another module judges it again (the factory calls `closure_bindings` looks for walk its module)."""
    return judged(
        model,
        kernel,
        ("WH015", "estimate", max_unroll, block_dim, arch, cpu),
        lambda: SharedMemoryEstimator(
            model, kernel, types(), max_unroll=max_unroll, block_dim=block_dim, arch=arch, cpu=cpu
        ).run(),
    )


class TileSharedMemory(Rule):
    id = "WH015"
    name = "tile-shared-memory"
    summary = "tiles need more shared memory than a block of the target has"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset(
        {Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.LAUNCHES, Fact.MODULE_OPTIONS, Fact.STRUCTS}
    )
    foreign_launches = True

    def applies(self, ctx: RuleContext) -> bool:
        return _limit(ctx.profile) is not None

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if launched_elsewhere(ctx):
            yield from self._launched_elsewhere(ctx, kernel)
        else:
            yield from self._judge(ctx, kernel)

    def _launched_elsewhere(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        """A kernel of another module (or reached indirectly) launched here: judged in its own module with
        this launch's block_dim, reported at the launch only when its own file (judging it without this
        launch) reports nothing."""
        assert ctx.project is not None
        # the launch asking for the most threads is where the budget is exceeded
        site = max(launches_of(ctx, kernel), key=lambda s: self._block_dims_of(ctx, s))
        defining = kernel_model(ctx, kernel)
        # the kernel's own module as context (once per module and analysis: its facts are computed once)
        own = ctx.once(
            (self.id, "module", id(defining)),
            lambda: dataclasses.replace(ctx, model=defining, rebound={}, _once={}),
        )
        with ctx.project.focused(None):
            if ctx.once(
                (self.id, "alone", id(kernel.node)), lambda: any(True for _ in self._judge(own, kernel))
            ):
                return
        for record in self._judge(own, kernel):
            yield dataclasses.replace(
                record,
                location=ctx.location(site.block_dim or site.node, kernel.name),
                fix=None,
                related=(Related(record.location, "the largest tiles"), *record.related),
            )

    @staticmethod
    def _block_dims_of(ctx: RuleContext, site: LaunchSite) -> int:
        value = site.fold(site.block_dim, ctx.constants.values, ctx.imports)
        return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_BLOCK_DIM

    def _judge(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        profile = ctx.profile
        limit = _limit(profile)
        assert limit is not None  # see `applies`
        tiles, reaches = self._tile_calls(ctx, kernel)
        if not tiles and not ctx.funcs:
            return
        # a kernel every launch of which pins device="cpu" never meets the GPU: judge it on Warp's CPU arena
        cpu = profile.device == "cpu" or (profile.is_cuda and self._cpu_only(ctx, kernel))
        if cpu:
            limit = CPU_TILE_ARENA
        # typed when first needed: a kernel reaching no tile, or judged already, needs no types
        types = functools.partial(ctx.types, kernel)
        if not reaches and self._budget_left(ctx, kernel, limit, cpu):
            return  # no tile: an empty estimate, which fits whatever block_dim the launches use
        block_dims = self._block_dims(ctx, kernel)
        # every site the estimator counts comes from a `tile*` call in the kernel or a function it calls
        max_unroll = self._max_unroll(ctx) if reaches else None
        estimate = (
            _estimate(
                ctx.model, kernel, types, max_unroll, _one(block_dims), None if cpu else profile.arch, cpu
            )
            if max_unroll is not None
            else Estimate()
        )
        if estimate.assumed:
            return  # sizes from a kernel factory's default argument: other calls may pass other values
        record = self._check_shared(ctx, kernel, types, estimate, limit, block_dims, max_unroll, cpu)
        if record is not None:
            yield record
        elif profile.is_cuda and not cpu and profile.max_registers_per_thread:
            register = self._check_registers(ctx, kernel, estimate, block_dims)
            if register is not None:
                yield register

    def _max_unroll(self, ctx: RuleContext) -> int:
        ctx.require(Fact.MODULE_OPTIONS)  # read from the text by the shared analysis
        return ctx.once((self.id, "max_unroll"), lambda: max_unroll_of(ctx.model))

    def _tile_calls(self, ctx: RuleContext, kernel: KernelDef) -> tuple[bool, bool]:
        """Whether the kernel calls a ``tile*`` builtin, and whether it or a function it calls does (a kernel
        launched from another file is judged twice there: see `_launched_elsewhere`)."""
        model = ctx.model
        tile_funcs: dict[str, bool] = ctx.once((self.id, "tile funcs"), dict)

        def find() -> tuple[bool, bool]:
            tiles = calls_tile(kernel, model)
            return tiles, tiles or (bool(ctx.funcs) and reaches_tile(kernel, model, tile_funcs))

        return judged(model, kernel, (self.id, "tile calls"), find)

    def _cpu_only(self, ctx: RuleContext, kernel: KernelDef) -> bool:
        """Whether the kernel has launches and every one of them says ``device="cpu"``."""
        sites = launches_of(ctx, kernel)
        if not sites:
            return False
        for site in sites:
            device = next((kw.value for kw in site.node.keywords if kw.arg == "device"), None)
            value: object = None
            if isinstance(device, ast.Constant):
                value = device.value
            elif device is not None:
                value = site.fold(device, ctx.constants.values, ctx.imports)
            if value != "cpu":
                return False
        return True

    # block_dim -----------------------------------------------------------------------------------
    def _block_dims(self, ctx: RuleContext, kernel: KernelDef) -> list[int] | None:
        """block_dim of every launch of the kernel; None when one of them is unknown (or none is seen)."""
        dims: list[int] = []
        sites = launches_of(ctx, kernel)
        if not sites:
            return None
        module_default: bool | None = None  # read once a launch without block_dim asks
        for site in sites:
            if site.block_dim is None:
                if site.tiled:
                    return None
                if module_default is None:
                    module_default = self._default_block_dim(ctx, kernel)
                if not module_default:
                    return None
                dims.append(DEFAULT_BLOCK_DIM)
                continue
            value = site.fold(site.block_dim, ctx.constants.values, ctx.imports)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                return None
            dims.append(value)
        return dims

    def _budget_left(self, ctx: RuleContext, kernel: KernelDef, limit: int, cpu: bool) -> bool:
        """Whether `_budget` is not negative whatever `_block_dims` answers (its largest value is one of
        the launches' explicit block_dims, the default or the warp size): told without reading the module's
        options (`_default_block_dim`, a walk of the whole file)."""
        if not ctx.profile.is_cuda or cpu:
            return limit >= 0
        largest = max(ctx.profile.warp_size, DEFAULT_BLOCK_DIM)
        for site in launches_of(ctx, kernel):
            if site.block_dim is not None:
                value = site.fold(site.block_dim, ctx.constants.values, ctx.imports)
                if isinstance(value, int) and not isinstance(value, bool) and value > largest:
                    largest = value
        return limit - 4 * largest >= 0

    @staticmethod
    def _default_block_dim(ctx: RuleContext, kernel: KernelDef) -> bool:
        """Whether a launch without block_dim runs 256 threads: no module-wide block_dim
        (``wp.set_module_options({"block_dim": 64})`` or the decorator) replaces it."""
        return "block_dim" not in kernel.options and not any(
            isinstance(key, ast.Constant) and key.value == "block_dim"
            for node in ctx.module_nodes(Fact.MODULE_OPTIONS).of(ast.Dict)
            for key in node.keys
        )

    # shared memory --------------------------------------------------------------------------------
    def _budget(
        self, ctx: RuleContext, limit: int, block_dims: list[int] | None, cpu: bool = False
    ) -> tuple[int, int | None]:
        """(usable bytes, block_dim used for the static reservation)."""
        if not ctx.profile.is_cuda or cpu:
            return limit, None
        block_dim = max(block_dims) if block_dims else ctx.profile.warp_size
        return limit - 4 * block_dim, (max(block_dims) if block_dims else None)

    def _check_shared(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: Callable[[], KernelTypes],
        estimate: Estimate,
        limit: int,
        block_dims: list[int] | None,
        max_unroll: int | None,
        cpu: bool = False,
    ) -> Record | None:
        """``max_unroll``: the file's, None when not read yet (no estimate was needed)."""
        budget, block_dim = self._budget(ctx, limit, block_dims, cpu)
        request = estimate.minimum
        if request <= budget:
            return None
        if max_unroll is None:
            max_unroll = self._max_unroll(ctx)
        sites = estimate.shared_sites
        # group the copies of one statement (unrolled loops)
        grouped: dict[int, list[Site]] = {}
        for site in sites:
            grouped.setdefault(id(site.node), []).append(site)
        groups = sorted(grouped.values(), key=lambda g: -sum(s.nbytes or 0 for s in g))
        profile = ctx.profile
        need = fmt_bytes(request)
        if need in (fmt_bytes(limit), fmt_bytes(budget)):
            need = f"{request} bytes"  # rounding would hide the difference
        if profile.is_cuda and not cpu:
            allows = f"{profile.name} allows {fmt_bytes(limit)} per block"
            if need.endswith("bytes"):
                allows = f"{profile.name} allows {limit} bytes per block"
            usable = (
                f" ({fmt_bytes(budget)} usable at block_dim={block_dim})"
                if block_dim is not None
                else " (less the 4 bytes per thread Warp reserves)"
            )
            message = (
                f"tiles of kernel `{kernel.name}` need at least {need} of shared memory; {allows}{usable}"
            )
        else:
            arena = f"{limit}-byte" if need.endswith("bytes") else fmt_bytes(limit)
            launched = ' (every launch of it says device="cpu")' if profile.is_cuda else ""
            message = (
                f"tiles of kernel `{kernel.name}` need at least {need} of shared memory; "
                f"Warp's CPU backend{launched} has a {arena} tile arena per block (the process aborts)"
            )
        related: list[Related] = []
        for group in groups[:6]:
            first = group[0]
            nbytes = sum(s.nbytes or 0 for s in group)
            what = f"{fmt_bytes(first.nbytes or 0)} shared tile of shape {first.shape} ({first.dtype})"
            if len(group) > 1:
                what = f"{len(group)} x {what} (one per unrolled iteration), {fmt_bytes(nbytes)}"
            related.append(Related(ctx.location(first.node, kernel.name), what))
        if estimate.extra_minimum and estimate.extra_call is not None:
            builtin = ctx.imports.warp_name(estimate.extra_call.func)
            what = f"scratch of `{builtin}`" if builtin else "shared tiles in the called function"
            related.append(
                Related(
                    ctx.location(estimate.extra_call, kernel.name),
                    f"{fmt_bytes(estimate.extra_minimum)} of {what}",
                )
            )
        anchor: ast.AST = groups[0][0].node if groups else (estimate.extra_call or kernel.node)
        hint, fix, lines = self._hint(ctx, kernel, types(), groups, budget, max_unroll, block_dims, cpu)
        return self.report(
            ctx,
            anchor,
            message,
            kernel=kernel.name,
            expected=budget,
            actual=request,
            hint=hint,
            fix=fix,
            related=related,
            lines=lines,
        )

    def _hint(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        groups: list[list[Site]],
        budget: int,
        max_unroll: int,
        block_dims: list[int] | None,
        cpu: bool,
    ) -> tuple[str, Fix | None, tuple[int, ...]]:
        parts: list[str] = []
        fix: Fix | None = None
        best = self._lower_constant(ctx, kernel, types, groups, budget, max_unroll, block_dims, cpu)
        if best is not None:
            name, old, new, after = best
            parts.append(f"lower {name} from {old} to {new} ({fmt_bytes(after)})")
            stmt = ctx.constants.definitions[name]
            literal = _literal_of(stmt, ctx)
            if literal is not None:
                fix = Fix(f"Set {name} = {new}", (ctx.replace(literal, str(new)),), safe=False)
        lines: tuple[int, ...] = ()
        unrolled = [g for g in groups if len(g) > 1 and g[0].loops]
        if unrolled:
            loop = unrolled[0][0].loops[-1][0]
            count = self._trip(ctx, kernel, types, loop, max_unroll)
            lines = (loop.lineno,)
            parts.append(
                f"the loop at line {QUOTED_LINE} is unrolled "
                f"({count} iterations <= max_unroll={max_unroll}) and "
                f"each iteration gets its own shared tiles: a trip count above max_unroll (or a runtime one) "
                f"keeps one copy"
            )
        if not parts:
            largest = groups[0][0] if groups else None
            if largest is not None:
                parts.append(
                    f"use smaller tiles (the largest, shape {largest.shape}, takes "
                    f"{fmt_bytes(sum(s.nbytes or 0 for s in groups[0]))}) or keep fewer of them in shared "
                    f"memory"
                )
            else:
                parts.append("use smaller tiles or keep fewer of them in shared memory")
        if ctx.profile.is_cuda and not cpu and (ctx.profile.shared_memory_limit or 0) < 232448:
            parts.append("or target a GPU with more shared memory per block (sm_90: 227 KiB)")
        return ", ".join(parts), fix, lines

    def _trip(
        self, ctx: RuleContext, kernel: KernelDef, types: KernelTypes, loop: ast.For, max_unroll: int
    ) -> int:
        count = SharedMemoryEstimator(ctx.model, kernel, types, max_unroll=max_unroll).trip_count(loop)
        return count or 0

    def _lower_constant(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        groups: list[list[Site]],
        budget: int,
        max_unroll: int,
        block_dims: list[int] | None,
        cpu: bool,
    ) -> tuple[str, int, int, int] | None:
        """The module constant in the shared tiles' shapes whose smallest power-of-two division fits."""
        arch = None if cpu else ctx.profile.arch
        local = set(types.variables) | {p.name for p in kernel.params}
        candidates: list[str] = []
        for group in groups:
            node = group[0].node
            if not isinstance(node, ast.Call):
                continue
            name = ctx.imports.warp_name(node.func)
            shape = call_arg(node, "shape", TILE_CREATORS[name]) if name in TILE_CREATORS else None
            for n in ast.walk(shape) if shape is not None else ():
                if (
                    isinstance(n, ast.Name)
                    and n.id not in local
                    and n.id in ctx.constants.definitions
                    and n.id not in candidates
                ):
                    candidates.append(n.id)
        best: tuple[str, int, int, int] | None = None
        for name in candidates[:6]:
            old = ctx.constants.values.get(name)
            if not isinstance(old, int) or isinstance(old, bool) or old < 2:
                continue
            factor = 2
            while factor <= old and old % factor == 0:
                new = old // factor
                env = refold_constants(ctx.model, name, new)
                after = (
                    SharedMemoryEstimator(
                        ctx.model,
                        kernel,
                        types,
                        env,
                        max_unroll,
                        block_dim=_one(block_dims),
                        arch=arch,
                        cpu=cpu,
                    )
                    .run()
                    .minimum
                )
                if after <= budget:
                    if best is None or new / old > best[2] / best[1]:
                        best = (name, old, new, after)
                    break
                factor *= 2
        return best

    # registers -----------------------------------------------------------------------------------
    def _check_registers(
        self, ctx: RuleContext, kernel: KernelDef, estimate: Estimate, block_dims: list[int] | None
    ) -> Record | None:
        profile = ctx.profile
        threads = max(block_dims) if block_dims else profile.max_threads_per_block
        limit = profile.max_registers_per_thread * 4
        worst: tuple[int, Site] | None = None
        for site in estimate.sites:
            if site.shared or not site.register or site.shape is None:
                continue
            size = byte_size(site.dtype)
            if size is None:
                continue
            per_thread = math.ceil(math.prod(site.shape) / threads) * size
            if per_thread > limit and (worst is None or per_thread > worst[0]):
                worst = (per_thread, site)
        if worst is None:
            return None
        per_thread, site = worst
        total = site.nbytes or 0
        where = f"block_dim={threads}" if block_dims else f"even at the largest block_dim, {threads}"
        return self.report(
            ctx,
            site.node,
            f"register tile of shape {site.shape} ({site.dtype}, {fmt_bytes(total)}) "
            f"puts {per_thread} bytes in "
            f"each thread ({where}); {profile.name} has {profile.max_registers_per_thread} 32-bit registers "
            f"({limit} bytes) per thread, so it spills to local memory",
            kernel=kernel.name,
            expected=limit,
            actual=per_thread,
            severity=Severity.WARNING,
            hint="split the work into smaller tiles (loop over sub-tiles), "
            'or use storage="shared" if it fits '
            "the block's shared memory; such tiles also take minutes to compile",
        )
