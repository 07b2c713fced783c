"""How much shared memory a tile kernel asks for: the tiles Warp allocates, walked the way its code
generator does (see WH015's documentation for what is counted).

Used by WH015 and by ``warp-harness tune`` (which drops candidates that cannot fit).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from warp_harness.model.constants import Value, fold
from warp_harness.model.index import NodeIndex, body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.tiles import TILE_CREATORS, call_arg, fold_shape, kernel_env
from warp_harness.model.types import FLOAT32, UNKNOWN, Tile, WarpType, byte_size

if TYPE_CHECKING:
    from warp_harness.model.module import ModuleModel

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
        model: ModuleModel,
        kernel: KernelDef,
        types: KernelTypes,
        constants: Mapping[str, Value] | None = None,
        max_unroll: int = DEFAULT_MAX_UNROLL,
        stack: tuple[str, ...] = (),
    ) -> None:
        self.model = model
        self.kernel = kernel
        self.types = types
        self.constants = constants
        self.env = kernel_env(model, types, constants)
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
        value = fold(stmt.test, self.env, self.model.imports)
        static = any(
            isinstance(n, ast.Call) and self.model.imports.warp_name(n.func) == "static"
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
            isinstance(n, ast.Call) and self.model.imports.warp_name(n.func) == "static"
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
            value = fold(node.test, self.env, self.model.imports)
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
        imports = self.model.imports

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
        shape = fold_shape(call_arg(node, "shape", TILE_CREATORS[name]), self.env, self.model)
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
        func = self.model.funcs.get(node.func.id)
        if func is None or func.name in self.stack or len(self.stack) > 8 or not func.has_python_body:
            return
        if node.func.id in self.types.variables:
            return
        inner = SharedMemoryEstimator(
            self.model, func, self.model.types(func), self.constants, self.max_unroll, self.stack
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


def max_unroll_of(model: ModuleModel) -> int:
    """Warp's max_unroll for this file: 16 unless the file sets it (0 when it sets an unknown value)."""
    if "max_unroll" not in model.source.text:
        return DEFAULT_MAX_UNROLL
    values: list[int] = []
    unknown = False
    for node in model.index.nodes:
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
        folded = fold(value, model.constants.values, model.imports)
        if isinstance(folded, int) and not isinstance(folded, bool):
            values.append(folded)
        else:
            unknown = True
    if unknown:
        return 0
    return min([DEFAULT_MAX_UNROLL, *values])


def refold_constants(model: ModuleModel, name: str, value: int) -> dict[str, Value]:
    """Module constants with ``name`` set to ``value`` and the constants derived from it refolded."""
    constants = model.constants
    env: dict[str, Value] = {}
    for other, stmt in sorted(constants.definitions.items(), key=lambda kv: kv[1].lineno):
        if other == name:
            env[other] = value
            continue
        assert stmt.value is not None
        folded = fold(stmt.value, env, model.imports)
        env[other] = folded if folded is not None else constants.values[other]
    for other, v in constants.values.items():
        env.setdefault(other, v)
    return env


def calls_tile(kernel: KernelDef, model: ModuleModel) -> bool:
    warp_name = model.imports.warp_name
    return any((warp_name(n.func) or "").startswith("tile") for n in body_index(kernel.node).of(ast.Call))


def reaches_tile(kernel: KernelDef, model: ModuleModel, memo: dict[str, bool]) -> bool:
    """Whether a ``@wp.func`` of this file that ``kernel`` may call (transitively, by name) calls a
    ``tile*`` builtin; ``memo``: the answer per function, for one analysis."""
    funcs = model.funcs
    seen = {kernel.name}
    stack = [kernel]
    while stack:
        for call in body_index(stack.pop().node).of(ast.Call):
            func = funcs.get(call.func.id) if isinstance(call.func, ast.Name) else None
            if func is None or func.name in seen:
                continue
            seen.add(func.name)
            if func.name not in memo:
                memo[func.name] = calls_tile(func, model)
            if memo[func.name]:
                return True
            stack.append(func)
    return False
