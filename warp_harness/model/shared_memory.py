"""How much shared memory a tile kernel asks for, modelled on how Warp 1.19's code generator allocates it
(``Adjoint.get_total_required_shared``: the value Warp writes as ``<kernel>_cuda_kernel_forward_smem_bytes``
into a module's ``.meta`` file).

Warp gives every tile *variable* of shared storage that owns its data an allocation of its own for the
whole kernel (``tile.size_in_bytes``: elements x element size rounded up to 16 bytes; no reuse between
tiles whose lifetimes do not overlap), and adds the largest extra frame of one call: a ``@wp.func``'s own
total, or the scratch a library call asks for (``tile_fft``/``tile_ifft`` through cuFFTDx). What the
walk models, as Warp's codegen does it:

- A tile is created in registers unless its creator says ``storage="shared"``; an operation moves a tile
  argument to shared memory by changing its type (``tile_matmul``'s operands and ``out``, the input of
  ``tile_transpose``/``tile_broadcast``/``tile_view``/``tile_squeeze``/``tile_reshape``, ``tile_extract``,
  ``tile_sort``, the Cholesky and triangular solvers, ``tile_diag_add``, an axis reduction, the indices of
  the indexed loads/stores, and reading or writing one element ``t[i, j]``); ``tile_fft`` moves it back to
  registers. Where a tile ends up is where the last such change left it.
- New shared tiles: the results of ``tile_matmul`` (without ``out``), ``tile_cholesky``, the solvers and
  ``tile_diag_add``. Views (transpose, broadcast, view, squeeze, reshape) alias their input: no bytes.
- Register results (``tile_map``, arithmetic, ``tile_astype``, scans, ``wp.tile(x)`` whose shape has
  ``block_dim`` in it) count once something moves them to shared memory.
- A ``for`` over a constant ``range`` of at most ``max_unroll`` iterations (any count with ``wp.static``
  in it) is unrolled, each copy with its own tiles; any other loop is generated once, and after it a name
  bound before the loop means its value from before the loop again (Warp assigns the loop's value into
  that variable). Both branches of an ``if`` are generated unless the condition is a constant; a name the
  two branches bind differently becomes a new tile (Warp's ``where`` phi) that shares the first branch's
  storage.

Where the model is not sure of a size it keeps two numbers: ``request``, the estimate (never below what
Warp allocates when every shape is known), and ``minimum``, what Warp allocates at least (what WH015 judges).

Used by WH015 and by ``warp-harness tune`` (which drops candidates that cannot fit).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from warp_harness.kernel_judgements import judged
from warp_harness.model.constants import Value, fold
from warp_harness.model.index import body_index, child_nodes
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.tiles import (
    TILE_CREATORS,
    call_arg,
    closure_values,
    fold_shape,
    kernel_env,
    param_dtype,
)
from warp_harness.model.types import (
    FLOAT32,
    UNKNOWN,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Tile,
    Vector,
    WarpType,
    byte_size,
)
from warp_harness.model.walk import walk, walk_all

if TYPE_CHECKING:
    from warp_harness.model.module import ModuleModel

CPU_TILE_ARENA = 256 * 1024  # Warp 1.19 native/tile.h: WP_MAX_CPU_SHARED
DEFAULT_MAX_UNROLL = 16  # Warp's module option max_unroll
DEFAULT_BLOCK_DIM = 256  # wp.launch's block_dim when none is given
TILE_ALIGNMENT = 16  # warp.types.tile.alignment: every shared tile is rounded up to it
_MAX_STEPS = 20000  # statements walked per estimate (unrolled loops multiply them)

# operations that move a tile argument into shared memory: name -> ((parameter, position), ...)
_FORCES: dict[str, tuple[tuple[str, int], ...]] = {
    "tile_matmul": (("a", 0), ("b", 1), ("out", 2)),
    "tile_transpose": (("a", 0),),
    "tile_broadcast": (("a", 0),),
    "tile_view": (("t", 0),),
    "tile_squeeze": (("t", 0),),
    "tile_reshape": (("t", 0),),
    "tile_slice_indexed": (("t", 0), ("indices", 1)),
    "tile_assign": (("dst", 0),),
    "tile_extract": (("a", 0),),
    "tile_sort": (("keys", 0), ("values", 1)),
    "tile_scatter_add": (("a", 0),),
    "tile_scatter_masked": (("a", 0),),
    "tile_cholesky": (("A", 0),),
    "tile_cholesky_inplace": (("A", 0),),
    "tile_cholesky_solve": (("L", 0), ("y", 1)),
    "tile_cholesky_solve_inplace": (("L", 0), ("y", 1)),
    "tile_lower_solve": (("L", 0), ("y", 1)),
    "tile_lower_solve_inplace": (("L", 0), ("y", 1)),
    "tile_upper_solve": (("U", 0), ("z", 1)),
    "tile_upper_solve_inplace": (("U", 0), ("z", 1)),
    "tile_diag_add": (("a", 0), ("d", 1)),
    "tile_load_indexed": (("indices", 1),),
    "tile_store_indexed": (("indices", 1),),
    "tile_atomic_add_indexed": (("indices", 1),),
}
# ... only when reducing over an axis: name -> (tile parameter, position, axis position)
_FORCES_WITH_AXIS = {"tile_sum": ("a", 0, 1), "tile_reduce": ("a", 1, 2)}
_FULL_REDUCTIONS = ("tile_sum", "tile_max", "tile_min", "tile_argmax", "tile_argmin", "tile_reduce")
# operations returning a view of their input (shared, owning nothing)
_VIEWS = ("tile_transpose", "tile_broadcast", "tile_view", "tile_squeeze", "tile_reshape")
# operations returning a new shared tile shaped like one argument: name -> (parameter, position) of the
# argument giving the shape, (parameter, position) of the one giving the dtype
_NEW_SHARED: dict[str, tuple[tuple[str, int], tuple[str, int]]] = {
    "tile_cholesky": (("A", 0), ("A", 0)),
    "tile_cholesky_solve": (("y", 1), ("L", 0)),
    "tile_lower_solve": (("y", 1), ("L", 0)),
    "tile_upper_solve": (("z", 1), ("U", 0)),
    "tile_diag_add": (("a", 0), ("a", 0)),
}
# operations returning a new register tile shaped and typed like their tile argument
_SAME_REGISTER = {
    "tile_scan_inclusive": ("a", 0),
    "tile_scan_exclusive": ("a", 0),
    "tile_scan_max_inclusive": ("a", 0),
    "tile_scan_min_inclusive": ("a", 0),
}
_CREATORS = (
    *TILE_CREATORS,
    "tile_arange",
    "tile_from_thread",
    "tile_randf",
    "tile_randi",
    "tile_load_indexed",
)

# cuFFTDx in Warp 1.19's libmathdx, sm_90: the (fft size, elements per thread) for which a transform needs
# half of ``size`` complex values of shared memory instead of all of them, per bytes of one complex value
# (8: vec2f, 16: vec2d); measured with ``wp_cuda_compile_fft`` over power-of-two sizes 2..4096 and 2..32
# elements per thread. Other architectures choose differently (sm_80 needs the full size for 128 x 2).
_FFT_SM90_HALF: dict[int, frozenset[tuple[int, int]]] = {
    8: frozenset(
        {(8, 2), (8, 4), (16, 2), (16, 4), (16, 8), (2048, 2), (2048, 16), (4096, 16)}
        | {(n, 16) for n in (128, 256, 512, 1024)}
    ),
    16: frozenset(
        {(4, 2), (8, 2), (8, 4), (32, 2), (32, 8), (64, 2), (64, 4), (64, 8)}
        | {(n, e) for n in (128, 256, 512, 1024) for e in (2, 8)}
        | {(2048, 2), (2048, 4), (2048, 8), (4096, 4), (4096, 8)}
    ),
}
_FFT_SM90_FAILS = frozenset({(16, 64, 32), (16, 128, 32), (16, 256, 32), (16, 512, 32), (16, 1024, 32)})


def fft_scratch(
    size: int, complex_bytes: int, block_dim: int | None, arch: int | None, cpu: bool
) -> tuple[int, int]:
    """(estimate, minimum) bytes of the scratch ``tile_fft``/``tile_ifft`` of one ``size``-point transform
    asks for (Warp's ``tile_fft_generic_lto_dispatch_func``)."""
    full = _round_up(size * complex_bytes)
    if cpu:
        # the sequential CPU path (block_dim 1) needs none; the cooperative one one transform's worth
        if block_dim is None:
            return full, 0
        return (0, 0) if block_dim == 1 else (full, full)
    if block_dim is None or block_dim <= 0:
        return full, 0
    ept = size // block_dim
    if ept == size:
        return 0, 0
    half = _round_up(size * complex_bytes // 2)
    if arch == 90 and complex_bytes in _FFT_SM90_HALF and size & (size - 1) == 0 and 2 <= size <= 4096:
        if ept in (2, 4, 8, 16, 32) and (complex_bytes, size, ept) not in _FFT_SM90_FAILS:
            exact = half if (size, ept) in _FFT_SM90_HALF[complex_bytes] else full
            return exact, exact
    return full, half


def _round_up(n: int) -> int:
    return (n + TILE_ALIGNMENT - 1) // TILE_ALIGNMENT * TILE_ALIGNMENT


def fmt_bytes(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.3g} MiB"
    if n >= 1024:
        return f"{n / 1024:.4g} KiB"
    return f"{n} B"


@dataclass(eq=False)
class Site:
    """One tile variable Warp generates (one per unrolled copy of the expression that creates it)."""

    node: ast.expr
    shape: tuple[int, ...] | None
    dtype: WarpType
    shared: bool = False
    creator: bool = False  # tile_load / tile_zeros / ...: its storage argument is the user's choice
    register: bool = False  # a creator surely asking for register storage
    loops: tuple[tuple[ast.For, int], ...] = ()
    owner: bool = True  # False for a view of another tile (transpose, broadcast, ...): no bytes of its own
    # sites whose storage this one shares (a phi shares its first branch's tile type)
    linked: list[Site] = field(default_factory=list)
    extra_bytes: int = 0  # beyond the elements: the count of a tile_stack

    @property
    def nbytes(self) -> int | None:
        """Bytes Warp allocates for it in shared memory (rounded up to 16); None when unknown."""
        size = byte_size(self.dtype)
        if self.shape is None or size is None or not self.owner:
            return None
        return _round_up(math.prod(self.shape) * size) + self.extra_bytes


class _Budget(Exception):
    pass


@dataclass(eq=False)
class Estimate:
    """A kernel's shared-memory estimate: its tile sites and the largest extra frame."""

    sites: list[Site] = field(default_factory=list)
    extra: int = 0  # the largest extra frame: a @wp.func called from the kernel, or a library call's scratch
    extra_call: ast.Call | None = None
    extra_minimum: int = 0  # what that frame needs at least
    complete: bool = True
    # the sizes depend on values the estimate assumed (the default argument of a kernel factory)
    assumed: bool = False

    @property
    def shared_sites(self) -> list[Site]:
        return [s for s in self.sites if s.shared and s.nbytes]

    @property
    def own(self) -> int:
        return sum(s.nbytes or 0 for s in self.shared_sites)

    @property
    def request(self) -> int:
        """The estimate of Warp's ``smem_bytes`` for the kernel."""
        return self.own + self.extra

    @property
    def minimum(self) -> int:
        """Bytes Warp surely allocates (what the estimate is sure of)."""
        return self.own + self.extra_minimum


class SharedMemoryEstimator:
    """Walks a kernel body the way Warp's code generator allocates tiles (see the module docstring).

    ``block_dim``: the block size the kernel is compiled for (shapes of ``wp.tile(x)``, the FFT's scratch);
    None when unknown. ``arch``: the CUDA architecture (None: unknown), ``cpu``: Warp's CPU backend."""

    def __init__(
        self,
        model: ModuleModel,
        kernel: KernelDef,
        types: KernelTypes,
        constants: Mapping[str, Value] | None = None,
        max_unroll: int = DEFAULT_MAX_UNROLL,
        stack: tuple[str, ...] = (),
        *,
        block_dim: int | None = None,
        arch: int | None = None,
        cpu: bool = False,
    ) -> None:
        self.model = model
        self.kernel = kernel
        self.types = types
        self.constants = constants
        self.env = kernel_env(model, types, constants)
        self.result = Estimate()
        closure, certain = closure_values(model, kernel, self.env)
        if closure:
            self.env = {**self.env, **closure}
            # a default argument may be overridden elsewhere; the one call of the file that passes every
            # size builds a kernel of exactly these sizes
            self.result.assumed = not certain
        self.max_unroll = max_unroll
        self.block_dim = block_dim
        self.arch = arch
        self.cpu = cpu
        self.stack = (*stack, kernel.name)
        self._steps = 0
        self._loops: tuple[tuple[ast.For, int], ...] = ()
        self._static: dict[int, tuple[ast.AST, bool]] = {}

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
            value = self._expr(stmt.value, env)
            if isinstance(stmt.target, ast.Subscript):
                # `t[i] += x`: an element update of a tile, in shared memory
                self._force(self._expr(stmt.target.value, env))
                self._expr(stmt.target.slice, env)
            elif isinstance(stmt.target, ast.Name):
                current = env.get(stmt.target.id)
                if current is None:
                    env[stmt.target.id] = None
                elif value is None and isinstance(
                    self.types.of(stmt.value), Scalar | Vector | Matrix | Quaternion
                ):
                    # `t += x` with a scalar: Warp's in-place update uses shared-memory atomics
                    self._force(current)
                # `t += u` with a tile updates t in place: no new tile
        elif isinstance(stmt, ast.For):
            self._for(stmt, env)
        elif isinstance(stmt, ast.While):
            self._expr(stmt.test, env)
            self._dynamic(stmt.body, env)
        elif isinstance(stmt, ast.If):
            self._if(stmt, env)
        elif isinstance(stmt, ast.Expr | ast.Return):
            if stmt.value is not None:
                self._expr(stmt.value, env)
        else:
            for child in child_nodes(stmt):
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
            for n in walk(target):
                if isinstance(n, ast.Name):
                    env[n.id] = None
                elif isinstance(n, ast.Subscript):
                    self._force(self._expr(n.value, env))

    @staticmethod
    def _assigned(body: list[ast.stmt]) -> set[str]:
        return {n.id for n in walk_all(body) if type(n) is ast.Name and isinstance(n.ctx, ast.Store)}

    def _forget(self, body: list[ast.stmt], env: dict[str, Site | None]) -> None:
        for name in self._assigned(body):
            env[name] = None

    def _dynamic(self, body: list[ast.stmt], env: dict[str, Site | None]) -> None:
        """A loop Warp generates once: a name bound before it is that variable again after it (Warp's
        ``materialize_redefinitions`` assigns the loop's value into it); a name new in the loop keeps its
        value from the loop."""
        before = dict(env)
        self._block(body, env)
        for name, site in before.items():
            env[name] = site

    def _if(self, stmt: ast.If, env: dict[str, Site | None]) -> None:
        self._expr(stmt.test, env)
        static = self._mentions_static(stmt.test)
        constant = (
            static
            or isinstance(stmt.test, ast.Constant)
            or (isinstance(stmt.test, ast.Name) and stmt.test.id in self.env)
        )
        if constant:
            # Warp generates only the branch a compile-time constant condition takes
            value = fold(stmt.test, self.env, self.model.imports)
            if value is not None:
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
            before = env.get(name)
            a = branches[0].get(name, before)
            b = branches[1].get(name, before)
            if a is b:
                env[name] = a
            elif name not in env and (name not in branches[0] or name not in branches[1]):
                env[name] = a if name in branches[0] else b  # bound on one path only: no phi
            elif a is not None and b is not None:
                env[name] = self._phi(stmt.test, a, b)
            else:
                env[name] = None

    def _phi(self, test: ast.expr, a: Site, b: Site) -> Site:
        """Warp's ``where(cond, a, b)`` merging a name two branches bind differently: a new tile variable
        that shares the tile type (so the storage) of a register operand (``a`` first), or, when both are
        shared already, a shared tile of its own (``where_value_func``)."""
        if a.shared and b.shared:
            return self._new(test, a.shape, a.dtype, True)
        typed = a if not a.shared else b
        phi = self._new(test, typed.shape, typed.dtype, False)
        phi.linked.append(typed)
        typed.linked.append(phi)
        return phi

    def _mentions_static(self, node: ast.AST) -> bool:
        """Whether a ``wp.static(...)`` call is in ``node`` (a loop's is asked again per unrolled copy of an
        enclosing loop: kept per node)."""
        key = id(node)
        found = self._static.get(key)
        if found is None or found[0] is not node:
            warp_name = self.model.imports.warp_name
            found = (node, any(type(n) is ast.Call and warp_name(n.func) == "static" for n in walk(node)))
            self._static[key] = found
        return found[1]

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
        if self._mentions_static(stmt):
            return count
        if count > self.max_unroll or _breaks(stmt.body):
            return None
        return count

    def _for(self, stmt: ast.For, env: dict[str, Site | None]) -> None:
        self._expr(stmt.iter, env)
        count = self.trip_count(stmt)
        if count is None:
            self._store(stmt.target, None, env)
            self._dynamic(stmt.body, env)
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
        owner: bool = True,
    ) -> Site:
        site = Site(node, shape, dtype, shared=shared, creator=creator, loops=self._loops, owner=owner)
        self.result.sites.append(site)
        return site

    @staticmethod
    def _force(site: Site | None, shared: bool = True) -> None:
        if site is None:
            return
        seen: list[Site] = [site]
        while seen:
            s = seen.pop()
            if s.shared == shared:
                continue
            s.shared = shared
            seen.extend(s.linked)

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
        for child in child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(child, env)
        return None

    def _fold(self, node: ast.expr | None) -> Value | None:
        return fold(node, self.env, self.model.imports) if node is not None else None

    def _mentions_constant(self, node: ast.expr) -> bool:
        env = self.env
        return any(type(n) is ast.Name and n.id in env for n in walk(node))

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
        if name in ("tile_fft", "tile_ifft"):
            return self._fft(node, arg("inout", 0))
        if name == "tile":
            return self._tile(node)
        if name == "tile_stack":
            return self._stack(node)
        forced = _FORCES.get(name, ())
        for param, position in forced:
            self._force(arg(param, position))
        if name in _FORCES_WITH_AXIS:
            param, position, axis_position = _FORCES_WITH_AXIS[name]
            if call_arg(node, "axis", axis_position) is not None:
                self._force(arg(param, position))
                a = arg(param, position)
                axis = self._fold(call_arg(node, "axis", axis_position))
                shape = None
                if (
                    a is not None
                    and a.shape is not None
                    and isinstance(axis, int)
                    and -len(a.shape) <= axis < len(a.shape)
                ):
                    rest = tuple(s for i, s in enumerate(a.shape) if i != axis % len(a.shape))
                    shape = rest or (1,)
                return self._new(node, shape, a.dtype if a is not None else UNKNOWN, False)
        if name in _CREATORS:
            return self._creator(node, name)
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
        if name in _NEW_SHARED:
            (shape_param, shape_pos), (dtype_param, dtype_pos) = _NEW_SHARED[name]
            shaped, typed = arg(shape_param, shape_pos), arg(dtype_param, dtype_pos)
            return self._new(
                node,
                shaped.shape if shaped is not None else None,
                typed.dtype if typed is not None else UNKNOWN,
                True,
            )
        if name in _VIEWS:
            return self._view(node, name, arg)
        if name in _SAME_REGISTER:
            a = arg(*_SAME_REGISTER[name])
            return self._new(node, a.shape, a.dtype, False) if a is not None else None
        if name == "tile_astype":
            a = arg("t", 0)
            dtype_node = call_arg(node, "dtype", 1)
            dtype = self.model.resolver.resolve(dtype_node) if dtype_node is not None else UNKNOWN
            return (
                self._new(node, a.shape if a is not None else None, dtype, False) if a is not None else None
            )
        if name == "tile_map":
            tiles = [s for s in positional[1:] if s is not None]
            if not tiles:
                return None
            inferred = self.types.of(node)
            dtype = (
                inferred.dtype
                if isinstance(inferred, Tile) and inferred.dtype is not UNKNOWN
                else tiles[0].dtype
            )
            return self._new(node, tiles[0].shape, dtype, False)
        if name in _FULL_REDUCTIONS:
            a = arg("a", 1 if name == "tile_reduce" else 0)
            dtype = Scalar("int32") if name in ("tile_argmax", "tile_argmin") else (a.dtype if a else UNKNOWN)
            return self._new(node, (1,), dtype, False) if a is not None else None
        return None

    def _view(self, node: ast.Call, name: str, arg: Callable[[str, int], Site | None]) -> Site | None:
        base: Site | None = arg("a", 0) if name in ("tile_transpose", "tile_broadcast") else arg("t", 0)
        shape: tuple[int, ...] | None = None
        if name == "tile_transpose":
            if base is not None and base.shape is not None and len(base.shape) == 2:
                shape = (base.shape[1], base.shape[0])
        elif name in ("tile_broadcast", "tile_reshape"):
            shape = fold_shape(call_arg(node, "shape", 1), self.env, self.model)
            if name == "tile_reshape" and shape is not None and -1 in shape and base and base.shape:
                known = math.prod(s for s in shape if s != -1)
                shape = (
                    tuple(math.prod(base.shape) // known if s == -1 else s for s in shape) if known else None
                )
        elif name == "tile_squeeze":
            if base is not None and base.shape is not None and call_arg(node, "axis", 1) is None:
                shape = tuple(s for s in base.shape if s != 1) or (1,)
        elif name == "tile_view":
            shape = fold_shape(call_arg(node, "shape", 2), self.env, self.model)
            offset = self._fold(call_arg(node, "offset", 1))
            if shape is None and base is not None and base.shape is not None and isinstance(offset, tuple):
                shape = base.shape[len(offset) :] or None
        return self._new(node, shape, base.dtype if base is not None else UNKNOWN, True, owner=False)

    def _fft(self, node: ast.Call, inout: Site | None) -> Site | None:
        # Warp moves the tile to registers and asks cuFFTDx for the scratch of one transform
        self._force(inout, shared=False)
        if inout is None or inout.shape is None:
            return None
        element = inout.dtype
        if not (isinstance(element, Vector) and element.length == 2):
            return None
        estimate, minimum = fft_scratch(
            inout.shape[-1], element.byte_size, self.block_dim, self.arch, self.cpu
        )
        self._extra(node, estimate, minimum)
        return None

    def _extra(self, node: ast.Call, estimate: int, minimum: int) -> None:
        if estimate > self.result.extra:
            self.result.extra = estimate
            self.result.extra_call = node
        self.result.extra_minimum = max(self.result.extra_minimum, minimum)

    def _tile(self, node: ast.Call) -> Site | None:
        """``wp.tile(x)``: one value per thread, a register tile of shape (..., block_dim)."""
        x = call_arg(node, "x", 0)
        if x is None:
            return None
        value = self.types.of(x)
        if value is UNKNOWN and isinstance(x, ast.Name):
            value = self._value_type(x.id)
        preserve = call_arg(node, "preserve_type", 1)
        keep = isinstance(preserve, ast.Constant) and preserve.value is True
        shape: tuple[int, ...] | None
        dtype: WarpType
        bd = self.block_dim
        if keep or isinstance(value, Scalar):
            shape, dtype = ((bd,) if bd else None), value
        elif isinstance(value, Vector):
            shape, dtype = ((value.length, bd) if bd else None), value.dtype
        elif isinstance(value, Quaternion):
            shape, dtype = ((4, bd) if bd else None), value.dtype
        elif isinstance(value, Matrix):
            shape, dtype = ((value.rows, value.cols, bd) if bd else None), value.dtype
        else:
            shape, dtype = None, UNKNOWN
        return self._new(node, shape, dtype, False)

    def _value_type(self, name: str) -> WarpType:
        """The type of a local bound once to ``wp.types.vector(dtype=D, length=N)`` (or ``wp.vector``)."""
        found: list[ast.expr] = []
        for n in body_index(self.kernel.node).of(ast.Assign):
            if any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
                found.append(n.value)
        if len(found) != 1 or not isinstance(found[0], ast.Call):
            return UNKNOWN
        call = found[0]
        func = call.func
        called = (
            func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        )
        if called != "vector":
            return UNKNOWN
        length = self._fold(call_arg(call, "length", 1))
        dtype = self.model.resolver.resolve(call_arg(call, "dtype", 2))
        if isinstance(length, int) and not isinstance(length, bool) and isinstance(dtype, Scalar):
            return Vector(length, dtype)
        return UNKNOWN

    def _stack(self, node: ast.Call) -> Site | None:
        """``wp.tile_stack(capacity, dtype)``: shared data plus a 16-byte count."""
        capacity = self._fold(call_arg(node, "capacity", 0))
        dtype = self.model.resolver.resolve(call_arg(node, "dtype", 1))
        size = byte_size(dtype)
        if not isinstance(capacity, int) or isinstance(capacity, bool) or size is None:
            return None
        site = self._new(node, (capacity,), dtype, True)
        site.extra_bytes = TILE_ALIGNMENT  # the element count, in an aligned slot of its own
        return site

    def _creator(self, node: ast.Call, name: str) -> Site | None:
        shape: tuple[int, ...] | None
        if name == "tile_arange":
            values = [fold(a, self.env, self.model.imports) for a in node.args]
            # bounds an int32 cannot hold are Warp's error, not a size
            ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1 << 31]
            shape = None
            if node.args and len(ints) == len(values) <= 3 and (len(ints) < 3 or ints[2] != 0):
                shape = (len(range(*ints)),)
        elif name == "tile_load_indexed":
            shape = fold_shape(call_arg(node, "shape", 2), self.env, self.model)
        else:
            shape = fold_shape(call_arg(node, "shape", TILE_CREATORS.get(name, 0)), self.env, self.model)
        inferred = self.types.of(node)
        dtype: WarpType = inferred.dtype if isinstance(inferred, Tile) else UNKNOWN
        if dtype is UNKNOWN:
            dtype = self._creator_dtype(node, name)
        storage = call_arg(node, "storage", None)
        shared = isinstance(storage, ast.Constant) and storage.value == "shared"
        site = self._new(node, shape, dtype, shared, creator=True)
        site.register = storage is None or (isinstance(storage, ast.Constant) and storage.value == "register")
        return site

    def _creator_dtype(self, node: ast.Call, name: str) -> WarpType:
        dtype_node = call_arg(node, "dtype", None)
        if dtype_node is not None:
            return self.model.resolver.resolve(dtype_node)
        if name in ("tile_zeros", "tile_ones", "tile_empty", "tile_arange"):
            return FLOAT32 if name != "tile_arange" else UNKNOWN
        if name in ("tile_load", "tile_load_indexed"):
            array = call_arg(node, "a", 0)
            inferred = self.types.of(array) if array is not None else UNKNOWN
            if isinstance(inferred, Array) and inferred.dtype is not UNKNOWN:
                return inferred.dtype
            if isinstance(array, ast.Name):
                return param_dtype(self.model, self.kernel, array.id)
        if name in ("tile_full", "tile_from_thread"):
            value = call_arg(node, "value", 1)
            if value is not None:
                found = self.types.of(value)
                if found is UNKNOWN and isinstance(value, ast.Name):
                    found = self._local_type(value.id)
                return found
        return UNKNOWN

    def _local_type(self, name: str) -> WarpType:
        """The type of a local from its first assignment whose type is known (Warp keeps a variable's type
        across reassignments): ``offset = 0`` is an int32."""
        for n in body_index(self.kernel.node).of(ast.Assign):
            if not any(isinstance(t, ast.Name) and t.id == name for t in n.targets):
                continue
            value = n.value
            if isinstance(value, ast.Constant) and type(value.value) in (int, float):
                return Scalar("int32") if isinstance(value.value, int) else FLOAT32
            found = self.types.of(value)
            if found is not UNKNOWN:
                return found
        return UNKNOWN

    def _user_call(self, node: ast.Call) -> None:
        assert isinstance(node.func, ast.Name)
        func = self.model.funcs.get(node.func.id)
        if func is None or func.name in self.stack or len(self.stack) > 8 or not func.has_python_body:
            return
        if node.func.id in self.types.variables:
            return

        def estimate() -> Estimate:
            return SharedMemoryEstimator(
                self.model,
                func,
                self.model.types(func),
                self.constants,
                self.max_unroll,
                self.stack,
                block_dim=self.block_dim,
                arch=self.arch,
                cpu=self.cpu,
            ).run()

        # a function called again (another call site, an unrolled copy) has the same frame: estimated once
        # per model and call stack (the stack stops recursion); refolded constants are asked once each
        inner = (
            judged(
                self.model,
                func,
                ("frame", self.max_unroll, self.stack, self.block_dim, self.arch, self.cpu),
                estimate,
            )
            if self.constants is None
            else estimate()
        )
        self._extra(node, inner.request, inner.minimum)
        self.result.assumed = self.result.assumed or inner.assumed


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
