"""## WH015 tile-shared-memory

The tiles of a kernel need more shared memory than one block of the target can have, or a
register tile is so large that it cannot stay in registers.

Warp gives every tile that lives in shared memory its own allocation for the whole kernel (no
reuse between tiles whose lifetimes do not overlap). A tile lives in shared memory when it is
created with `storage="shared"`, when it is the result of `C = wp.tile_matmul(A, B)`, or when an
operation moves it there: the operands of `tile_matmul`, the input of `tile_transpose`,
`tile_broadcast`, `tile_reshape`, `tile_view`, `tile_squeeze`, `tile_sort`, `tile_sum`/`tile_reduce`
over an axis, the Cholesky and triangular solvers, and any tile that is indexed (`t[i, j]`) or
written element-wise. A `for` loop with a constant trip count of at most `max_unroll` (16 by
default) is unrolled by Warp, and every copy of its body gets its own tiles: a K loop of 8 steps
that loads two shared tiles needs 16 of them.

The request is compared with the target profile: on CUDA, the opt-in shared memory per block
minus the `4 * block_dim` bytes Warp reserves statically (`block_dim` from the kernel's launch
sites); on Warp's CPU backend, the fixed 256 KiB tile arena of each block (Warp 1.19's
`WP_MAX_CPU_SHARED`; larger requests abort the process). The estimate is a lower bound of what
Warp allocates (it counts only tiles whose size and storage are certain, and unrolls only loops it
is sure Warp unrolls), so a kernel it reports cannot fit.

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
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from warp_harness.model.constants import Value, fold
from warp_harness.model.index import NodeIndex, body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import FLOAT32, UNKNOWN, Tile, WarpType, byte_size
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Rule, RuleContext
from warp_harness.rules.wh009_tile_matmul_shape import TILE_CREATORS, call_arg, fold_shape, kernel_env

CPU_TILE_ARENA = 256 * 1024  # Warp 1.19 native/tile.h: WP_MAX_CPU_SHARED
DEFAULT_MAX_UNROLL = 16  # Warp's module option max_unroll
DEFAULT_BLOCK_DIM = 256  # wp.launch's block_dim when none is given
_MAX_STEPS = 20000  # statements walked per estimate (unrolled loops multiply them)

# operations that move a tile argument into shared memory: name -> ((parameter, position), ...)
_FORCES: dict[str, tuple[tuple[str, int], ...]] = {
    "tile_matmul": (("a", 0), ("b", 1), ("out", 2)),
    "tile_transpose": (("a", 0),),
    "tile_broadcast": (("a", 0),),
    "tile_view": (("t", 0),),
    "tile_squeeze": (("t", 0),),
    "tile_reshape": (("t", 0),),
    "tile_slice_indexed": (("t", 0),),
    "tile_assign": (("dst", 0),),
    "tile_sort": (("keys", 0), ("values", 1)),
    "tile_scatter_add": (("a", 0),),
    "tile_scatter_masked": (("a", 0),),
    "tile_cholesky": (("A", 0),),
    "tile_cholesky_solve": (("L", 0), ("y", 1)),
    "tile_lower_solve": (("L", 0), ("y", 1)),
    "tile_upper_solve": (("U", 0), ("z", 1)),
    "tile_diag_add": (("a", 0), ("d", 1)),
    "tile_load_indexed": (("indices", 1),),
    "tile_store_indexed": (("indices", 1),),
    "tile_atomic_add_indexed": (("indices", 1),),
}
# ... only when reducing over an axis: name -> (tile parameter, position, axis position)
_FORCES_WITH_AXIS = {"tile_sum": ("a", 0, 1), "tile_reduce": ("a", 1, 2)}
_FULL_REDUCTIONS = ("tile_sum", "tile_max", "tile_min")


def fmt_bytes(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.3g} MiB"
    if n >= 1024:
        return f"{n / 1024:.4g} KiB"
    return f"{n} B"


@dataclass(eq=False)
class Site:
    """One tile Warp allocates (one per unrolled copy of the statement that creates it)."""

    node: ast.expr
    shape: tuple[int, ...] | None
    dtype: WarpType
    shared: bool = False
    creator: bool = False  # tile_load / tile_zeros / ...: its storage argument is the user's choice
    register: bool = False  # a creator surely asking for register storage
    loops: tuple[tuple[ast.For, int], ...] = ()

    @property
    def nbytes(self) -> int | None:
        size = byte_size(self.dtype)
        if self.shape is None or size is None:
            return None
        return math.prod(self.shape) * size


class _Budget(Exception):
    pass


@dataclass
class Estimate:
    sites: list[Site] = field(default_factory=list)
    extra: int = 0  # the largest frame of a @wp.func called from the kernel
    extra_call: ast.Call | None = None
    complete: bool = True

    @property
    def shared_sites(self) -> list[Site]:
        return [s for s in self.sites if s.shared and s.nbytes]

    @property
    def request(self) -> int:
        return sum(s.nbytes or 0 for s in self.shared_sites) + self.extra


class SharedMemoryEstimator:
    """Walks a kernel body the way Warp's code generator allocates tiles (see the module docstring)."""

    def __init__(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        constants: Mapping[str, Value] | None = None,
        max_unroll: int = DEFAULT_MAX_UNROLL,
        stack: tuple[str, ...] = (),
    ) -> None:
        self.ctx = ctx
        self.kernel = kernel
        self.types = types
        self.constants = constants
        self.env = kernel_env(ctx, types, constants)
        self.max_unroll = max_unroll
        self.stack = (*stack, kernel.name)
        self.result = Estimate()
        self._steps = 0
        self._loops: tuple[tuple[ast.For, int], ...] = ()

    def run(self) -> Estimate:
        try:
            self._block(self.kernel.node.body, {})
        except (_Budget, RecursionError):
            self.result.complete = False
        return self.result

    # statements ---------------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt], env: dict[str, Site | None]) -> None:
        for stmt in body:
            self._steps += 1
            if self._steps > _MAX_STEPS:
                raise _Budget
            self._stmt(stmt, env)
            if isinstance(stmt, ast.Return):
                return  # what follows may not be generated: count none of it

    def _stmt(self, stmt: ast.stmt, env: dict[str, Site | None]) -> None:
        if isinstance(stmt, ast.Assign):
            site = self._expr(stmt.value, env)
            for target in stmt.targets:
                self._store(target, site, env)
        elif isinstance(stmt, ast.AnnAssign):
            site = self._expr(stmt.value, env) if stmt.value is not None else None
            self._store(stmt.target, site, env)
        elif isinstance(stmt, ast.AugAssign):
            self._expr(stmt.value, env)
            if isinstance(stmt.target, ast.Subscript):
                self._force(self._expr(stmt.target.value, env))
                self._expr(stmt.target.slice, env)
            else:
                # `acc += x` on a tile: whether Warp updates in place or makes a new tile is not modelled
                for n in ast.walk(stmt.target):
                    if isinstance(n, ast.Name):
                        env[n.id] = None
        elif isinstance(stmt, ast.For):
            self._for(stmt, env)
        elif isinstance(stmt, ast.While):
            self._expr(stmt.test, env)
            self._forget(stmt.body, env)
            self._block(stmt.body, env)
            self._forget(stmt.body, env)
        elif isinstance(stmt, ast.If):
            self._if(stmt, env)
        elif isinstance(stmt, ast.Expr | ast.Return):
            if stmt.value is not None:
                self._expr(stmt.value, env)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._expr(child, env)

    def _store(self, target: ast.expr, site: Site | None, env: dict[str, Site | None]) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = site
        elif isinstance(target, ast.Subscript):
            # writing an element of a tile moves it to shared memory
            self._force(self._expr(target.value, env))
            self._expr(target.slice, env)
        else:
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    env[n.id] = None
                elif isinstance(n, ast.Subscript):
                    self._force(self._expr(n.value, env))

    @staticmethod
    def _assigned(body: list[ast.stmt]) -> set[str]:
        return {n.id for n in NodeIndex(body).of(ast.Name) if isinstance(n.ctx, ast.Store)}

    def _forget(self, body: list[ast.stmt], env: dict[str, Site | None]) -> None:
        for name in self._assigned(body):
            env[name] = None

    def _if(self, stmt: ast.If, env: dict[str, Site | None]) -> None:
        self._expr(stmt.test, env)
        value = fold(stmt.test, self.env, self.ctx.model.imports)
        static = any(
            isinstance(n, ast.Call) and self.ctx.model.imports.warp_name(n.func) == "static"
            for n in ast.walk(stmt.test)
        )
        if value is not None or static or self._mentions_constant(stmt.test):
            # Warp may drop a branch whose condition is known when it compiles: count the taken one only
            if value is not None and not static:
                self._block(stmt.body if value else stmt.orelse, env)
            else:
                self._forget(stmt.body + stmt.orelse, env)
            return
        branches = []
        for body in (stmt.body, stmt.orelse):
            branch = dict(env)
            self._block(body, branch)
            branches.append(branch)
        for name in set(branches[0]) | set(branches[1]):
            a, b = branches[0].get(name), branches[1].get(name)
            env[name] = a if a is b else None

    def _mentions_constant(self, node: ast.expr) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.env for n in ast.walk(node))

    def trip_count(self, stmt: ast.For) -> int | None:
        """Iterations of a loop Warp surely unrolls; None for a loop it keeps (or might keep)."""
        it = stmt.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and 1 <= len(it.args) <= 3
            and not it.keywords
        ):
            return None
        values: list[int] = []
        for arg in it.args:
            v: object = None
            if isinstance(arg, ast.Constant):
                v = arg.value
            elif (
                isinstance(arg, ast.UnaryOp)
                and isinstance(arg.op, ast.USub)
                and isinstance(arg.operand, ast.Constant)
                and isinstance(arg.operand.value, int)
            ):
                v = -arg.operand.value
            elif isinstance(arg, ast.Name):
                v = self.env.get(arg.id)
            if not isinstance(v, int) or isinstance(v, bool):
                return None
            values.append(v)
        try:
            count = len(range(*values))
        except ValueError:
            return None
        static = any(
            isinstance(n, ast.Call) and self.ctx.model.imports.warp_name(n.func) == "static"
            for n in ast.walk(stmt)
        )
        if static:
            return count
        if count > self.max_unroll or _breaks(stmt.body):
            return None
        return count

    def _for(self, stmt: ast.For, env: dict[str, Site | None]) -> None:
        self._expr(stmt.iter, env)
        count = self.trip_count(stmt)
        if count is None:
            self._store(stmt.target, None, env)
            self._forget(stmt.body, env)
            self._block(stmt.body, env)
            self._forget(stmt.body, env)
        else:
            outer = self._loops
            for copy in range(count):
                self._loops = (*outer, (stmt, copy))
                self._store(stmt.target, None, env)
                self._block(stmt.body, env)
            self._loops = outer
        self._block(stmt.orelse, env)

    # expressions --------------------------------------------------------------------------------
    def _new(
        self,
        node: ast.expr,
        shape: tuple[int, ...] | None,
        dtype: WarpType,
        shared: bool,
        creator: bool = False,
    ) -> Site:
        site = Site(node, shape, dtype, shared=shared, creator=creator, loops=self._loops)
        self.result.sites.append(site)
        return site

    @staticmethod
    def _force(site: Site | None) -> None:
        if site is not None:
            site.shared = True

    def _expr(self, node: ast.expr | None, env: dict[str, Site | None]) -> Site | None:
        if node is None:
            return None
        if isinstance(node, ast.Name):
            return env.get(node.id)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.BinOp):
            left, right = self._expr(node.left, env), self._expr(node.right, env)
            if left is None and right is None:
                return None
            if left is not None and right is not None and left.shape != right.shape:
                return self._new(node, None, UNKNOWN, False)
            base = left if left is not None else right
            assert base is not None
            return self._new(node, base.shape, base.dtype, False)
        if isinstance(node, ast.UnaryOp):
            operand = self._expr(node.operand, env)
            return self._new(node, operand.shape, operand.dtype, False) if operand is not None else None
        if isinstance(node, ast.IfExp):
            self._expr(node.test, env)
            value = fold(node.test, self.env, self.ctx.model.imports)
            if value is not None:
                self._expr(node.body if value else node.orelse, env)
            elif not self._mentions_constant(node.test):
                self._expr(node.body, env)
                self._expr(node.orelse, env)
            return None
        if isinstance(node, ast.Subscript):
            # reading an element (or a slice) of a tile moves it to shared memory
            self._force(self._expr(node.value, env))
            self._expr(node.slice, env)
            return None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(child, env)
        return None

    def _call(self, node: ast.Call, env: dict[str, Site | None]) -> Site | None:
        positional = [self._expr(a, env) for a in node.args]
        keywords = {kw.arg: self._expr(kw.value, env) for kw in node.keywords if kw.arg}
        imports = self.ctx.model.imports

        def arg(name: str, position: int) -> Site | None:
            if name in keywords:
                return keywords[name]
            return positional[position] if position < len(positional) else None

        name = imports.warp_name(node.func)
        if name is None:
            if isinstance(node.func, ast.Name):
                self._user_call(node)
            else:
                self._expr(node.func, env)
            return None
        if name in TILE_CREATORS:
            return self._creator(node, name)
        forced = _FORCES.get(name, ())
        for param, position in forced:
            self._force(arg(param, position))
        if name in _FORCES_WITH_AXIS:
            param, position, axis_position = _FORCES_WITH_AXIS[name]
            if call_arg(node, "axis", axis_position) is not None:
                self._force(arg(param, position))
                return None
        if name == "tile_matmul" and call_arg(node, "out", 2) is None:
            a, b = arg("a", 0), arg("b", 1)
            shape = None
            if (
                a is not None
                and b is not None
                and a.shape
                and b.shape
                and len(a.shape) == 2
                and len(b.shape) == 2
            ):
                shape = (a.shape[0], b.shape[1])
            return self._new(node, shape, a.dtype if a is not None else UNKNOWN, True)
        if name in _FULL_REDUCTIONS and call_arg(node, "axis", 1) is None:
            a = arg("a", 0)
            return self._new(node, (1,), a.dtype, False) if a is not None else None
        return None

    def _creator(self, node: ast.Call, name: str) -> Site | None:
        shape = fold_shape(call_arg(node, "shape", TILE_CREATORS[name]), self.env, self.ctx)
        inferred = self.types.of(node)
        dtype: WarpType = inferred.dtype if isinstance(inferred, Tile) else UNKNOWN
        if (
            dtype is UNKNOWN
            and name in ("tile_zeros", "tile_ones", "tile_empty")
            and call_arg(node, "dtype", 1) is None
        ):
            dtype = FLOAT32
        storage = call_arg(node, "storage", None)
        shared = isinstance(storage, ast.Constant) and storage.value == "shared"
        site = self._new(node, shape, dtype, shared, creator=True)
        site.register = storage is None or (isinstance(storage, ast.Constant) and storage.value == "register")
        return site

    def _user_call(self, node: ast.Call) -> None:
        assert isinstance(node.func, ast.Name)
        func = self.ctx.model.funcs.get(node.func.id)
        if func is None or func.name in self.stack or len(self.stack) > 8 or not func.has_python_body:
            return
        if node.func.id in self.types.variables:
            return
        inner = SharedMemoryEstimator(
            self.ctx, func, self.ctx.model.types(func), self.constants, self.max_unroll, self.stack
        ).run()
        if inner.request > self.result.extra:
            self.result.extra = inner.request
            self.result.extra_call = node


def _breaks(body: list[ast.stmt]) -> bool:
    for stmt in body:
        if isinstance(stmt, ast.Break):
            return True
        if isinstance(stmt, ast.If) and (_breaks(stmt.body) or _breaks(stmt.orelse)):
            return True
    return False


def max_unroll_of(ctx: RuleContext) -> int:
    """Warp's max_unroll for this file: 16 unless the file sets it (0 when it sets an unknown value)."""
    if "max_unroll" not in ctx.model.source.text:
        return DEFAULT_MAX_UNROLL
    values: list[int] = []
    unknown = False
    for node in ctx.model.index.nodes:
        value: ast.expr | None = None
        if isinstance(node, ast.keyword) and node.arg == "max_unroll":
            value = node.value
        elif isinstance(node, ast.Dict):
            for key, v in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "max_unroll":
                    value = v
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == "max_unroll" for t in node.targets
        ):
            value = node.value
        if value is None:
            continue
        folded = fold(value, ctx.model.constants.values, ctx.model.imports)
        if isinstance(folded, int) and not isinstance(folded, bool):
            values.append(folded)
        else:
            unknown = True
    if unknown:
        return 0
    return min([DEFAULT_MAX_UNROLL, *values])


def _refold(ctx: RuleContext, name: str, value: int) -> dict[str, Value]:
    """Module constants with ``name`` set to ``value`` and the constants derived from it refolded."""
    constants = ctx.model.constants
    env: dict[str, Value] = {}
    for other, stmt in sorted(constants.definitions.items(), key=lambda kv: kv[1].lineno):
        if other == name:
            env[other] = value
            continue
        assert stmt.value is not None
        folded = fold(stmt.value, env, ctx.model.imports)
        env[other] = folded if folded is not None else constants.values[other]
    for other, v in constants.values.items():
        env.setdefault(other, v)
    return env


def _literal_of(stmt: ast.Assign | ast.AnnAssign, ctx: RuleContext) -> ast.Constant | None:
    """The int literal a constant's definition holds (``64`` in ``TILE_K = wp.constant(64)``)."""
    value = stmt.value
    if (
        isinstance(value, ast.Call)
        and ctx.model.imports.warp_name(value.func) in ("constant", "int32")
        and len(value.args) == 1
        and not value.keywords
    ):
        value = value.args[0]
    if isinstance(value, ast.Constant) and isinstance(value.value, int) and not isinstance(value.value, bool):
        return value
    return None


def _calls_tile(kernel: KernelDef, ctx: RuleContext) -> bool:
    warp_name = ctx.model.imports.warp_name
    return any((warp_name(n.func) or "").startswith("tile") for n in body_index(kernel.node).of(ast.Call))


def _reaches_tile(kernel: KernelDef, ctx: RuleContext, memo: dict[str, bool]) -> bool:
    """Whether a ``@wp.func`` of this file that ``kernel`` may call (transitively, by name) calls a
    ``tile*`` builtin; ``memo``: the answer per function, for one analysis."""
    funcs = ctx.model.funcs
    seen = {kernel.name}
    stack = [kernel]
    while stack:
        for call in body_index(stack.pop().node).of(ast.Call):
            func = funcs.get(call.func.id) if isinstance(call.func, ast.Name) else None
            if func is None or func.name in seen:
                continue
            seen.add(func.name)
            if func.name not in memo:
                memo[func.name] = _calls_tile(func, ctx)
            if memo[func.name]:
                return True
            stack.append(func)
    return False


class TileSharedMemory(Rule):
    id = "WH015"
    name = "tile-shared-memory"
    summary = "tiles need more shared memory than a block of the target has"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    def check(self, ctx: RuleContext) -> Iterator[Record]:
        profile = ctx.profile
        if profile.device == "cpu":
            limit: int | None = CPU_TILE_ARENA
        else:
            limit = profile.shared_memory_limit if profile.is_cuda else None
        if limit is None:
            return
        max_unroll = max_unroll_of(ctx)
        tile_funcs: dict[str, bool] = {}
        for kernel in ctx.model.kernels:
            if not kernel.is_kernel:
                continue
            calls_tile = _calls_tile(kernel, ctx)
            if not calls_tile and not ctx.model.funcs:
                continue
            types = ctx.model.types(kernel)
            # every site the estimator counts comes from a `tile*` call in the kernel or a function it calls
            estimate = (
                SharedMemoryEstimator(ctx, kernel, types, max_unroll=max_unroll).run()
                if calls_tile or _reaches_tile(kernel, ctx, tile_funcs)
                else Estimate()
            )
            block_dims = self._block_dims(ctx, kernel)
            record = self._check_shared(ctx, kernel, types, estimate, limit, block_dims, max_unroll)
            if record is not None:
                yield record
            elif profile.is_cuda and profile.max_registers_per_thread:
                register = self._check_registers(ctx, kernel, estimate, block_dims)
                if register is not None:
                    yield register

    # block_dim -----------------------------------------------------------------------------------
    def _block_dims(self, ctx: RuleContext, kernel: KernelDef) -> list[int] | None:
        """block_dim of every launch of the kernel; None when one of them is unknown (or none is seen)."""
        dims: list[int] = []
        sites = ctx.model.launches_of(kernel)
        if not sites:
            return None
        # a module-wide block_dim (wp.set_module_options({"block_dim": 64}) or the decorator) replaces 256
        module_default = "block_dim" not in kernel.options and not any(
            isinstance(key, ast.Constant) and key.value == "block_dim"
            for node in ctx.model.index.of(ast.Dict)
            for key in node.keys
        )
        for site in sites:
            if site.block_dim is None:
                if site.tiled or not module_default:
                    return None
                dims.append(DEFAULT_BLOCK_DIM)
                continue
            value = site.fold(site.block_dim, ctx.model.constants.values, ctx.model.imports)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                return None
            dims.append(value)
        return dims

    # shared memory --------------------------------------------------------------------------------
    def _budget(self, ctx: RuleContext, limit: int, block_dims: list[int] | None) -> tuple[int, int | None]:
        """(usable bytes, block_dim used for the static reservation)."""
        if not ctx.profile.is_cuda:
            return limit, None
        block_dim = max(block_dims) if block_dims else ctx.profile.warp_size
        return limit - 4 * block_dim, (max(block_dims) if block_dims else None)

    def _check_shared(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        estimate: Estimate,
        limit: int,
        block_dims: list[int] | None,
        max_unroll: int,
    ) -> Record | None:
        budget, block_dim = self._budget(ctx, limit, block_dims)
        request = estimate.request
        if request <= budget:
            return None
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
        if profile.is_cuda:
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
            message = (
                f"tiles of kernel `{kernel.name}` need at least {need} of shared memory; "
                f"Warp's CPU backend has a {arena} tile arena per block (the process aborts)"
            )
        related: list[Related] = []
        for group in groups[:6]:
            first = group[0]
            nbytes = sum(s.nbytes or 0 for s in group)
            what = f"{fmt_bytes(first.nbytes or 0)} shared tile of shape {first.shape} ({first.dtype})"
            if len(group) > 1:
                what = f"{len(group)} x {what} (one per unrolled iteration), {fmt_bytes(nbytes)}"
            related.append(Related(ctx.location(first.node, kernel.name), what))
        if estimate.extra and estimate.extra_call is not None:
            related.append(
                Related(
                    ctx.location(estimate.extra_call, kernel.name),
                    f"{fmt_bytes(estimate.extra)} of shared tiles in the called function",
                )
            )
        anchor: ast.AST = groups[0][0].node if groups else (estimate.extra_call or kernel.node)
        hint, fix = self._hint(ctx, kernel, types, groups, budget, max_unroll, estimate)
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
        )

    def _hint(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        groups: list[list[Site]],
        budget: int,
        max_unroll: int,
        estimate: Estimate,
    ) -> tuple[str, Fix | None]:
        parts: list[str] = []
        fix: Fix | None = None
        best = self._lower_constant(ctx, kernel, types, groups, budget, max_unroll)
        if best is not None:
            name, old, new, after = best
            parts.append(f"lower {name} from {old} to {new} ({fmt_bytes(after)})")
            stmt = ctx.model.constants.definitions[name]
            literal = _literal_of(stmt, ctx)
            if literal is not None:
                fix = Fix(f"Set {name} = {new}", (ctx.replace(literal, str(new)),), safe=False)
        unrolled = [g for g in groups if len(g) > 1 and g[0].loops]
        if unrolled:
            loop = unrolled[0][0].loops[-1][0]
            count = self._trip(ctx, kernel, types, loop, max_unroll)
            parts.append(
                f"the loop at line {loop.lineno} is unrolled "
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
        if ctx.profile.is_cuda and (ctx.profile.shared_memory_limit or 0) < 232448:
            parts.append("or target a GPU with more shared memory per block (sm_90: 227 KiB)")
        return ", ".join(parts), fix

    def _trip(
        self, ctx: RuleContext, kernel: KernelDef, types: KernelTypes, loop: ast.For, max_unroll: int
    ) -> int:
        count = SharedMemoryEstimator(ctx, kernel, types, max_unroll=max_unroll).trip_count(loop)
        return count or 0

    def _lower_constant(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        groups: list[list[Site]],
        budget: int,
        max_unroll: int,
    ) -> tuple[str, int, int, int] | None:
        """The module constant in the shared tiles' shapes whose smallest power-of-two division fits."""
        local = set(types.variables) | {p.name for p in kernel.params}
        candidates: list[str] = []
        for group in groups:
            node = group[0].node
            if not isinstance(node, ast.Call):
                continue
            name = ctx.model.imports.warp_name(node.func)
            shape = call_arg(node, "shape", TILE_CREATORS[name]) if name in TILE_CREATORS else None
            for n in ast.walk(shape) if shape is not None else ():
                if (
                    isinstance(n, ast.Name)
                    and n.id not in local
                    and n.id in ctx.model.constants.definitions
                    and n.id not in candidates
                ):
                    candidates.append(n.id)
        best: tuple[str, int, int, int] | None = None
        for name in candidates[:6]:
            old = ctx.model.constants.values.get(name)
            if not isinstance(old, int) or isinstance(old, bool) or old < 2:
                continue
            factor = 2
            while factor <= old and old % factor == 0:
                new = old // factor
                env = _refold(ctx, name, new)
                after = SharedMemoryEstimator(ctx, kernel, types, env, max_unroll).run().request
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
