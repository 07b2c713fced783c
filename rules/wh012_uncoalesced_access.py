"""## WH012 uncoalesced-access

In a kernel with a 2-D (or higher) thread index, `i, j = wp.tid()`, an array is indexed with
the *fastest-varying* thread index (the last one unpacked, `j`) on a slow axis and a slower
thread index on its last axis: `a[j, i]`. Warp arrays are C-contiguous (row-major), so
consecutive threads (consecutive `j`) touch elements a whole row apart instead of neighbours.

The rule is deliberately narrow. It reports only when:
- every index of the access is a thread index, optionally plus or minus a constant
  (`a[j, i]`, `a[j + 1, i]`);
- *no* access in the kernel is already coalesced, i.e. nothing indexes its last axis with
  `j` or a value computed from `j`, and `j` is not handed to a `@wp.func` or another builtin
  that takes an array (a transpose that reads `a[j, i]` and writes `b[i, j]` is coalesced on
  one side whatever the mapping, and is not reported);
- the array is a plain `wp.array` (not indexed or fabric arrays), and no launch in the file
  passes an obviously transposed or sliced view for it, or launches with fewer than a warp's
  worth of threads along the fast dimension.

### Why it matters
A GPU warp issues one memory transaction for 32 neighbouring elements; 32 elements a row
apart need up to 32 transactions, so a memory-bound kernel can run many times slower. On the
CPU the same pattern walks memory with a large stride and wastes cache lines.

### Bad
```python
@wp.kernel
def scale(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    out[j, i] = 2.0 * a[j, i]

wp.launch(scale, dim=(n, m), inputs=[a, out])
```

### Good
```python
@wp.kernel
def scale(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    j, i = wp.tid()  # i (the last axis of a) now varies fastest
    out[j, i] = 2.0 * a[j, i]

wp.launch(scale, dim=(m, n), inputs=[a, out])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warp_harness.model.constants import fold
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launch_dims import dim_rank
from warp_harness.model.types import Array, Matrix, Quaternion, Scalar, Transform, Vector
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import derived_names, launch_arguments, launch_kernel, mentions

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
}
_PY_PURE = {"int", "float", "bool", "min", "max", "abs", "round", "range", "len", "pow"}
# view-producing host expressions: the kernel then sees a strided, not C-contiguous, array
_VIEW_ATTRIBUTES = {"T", "transpose", "flatten", "view", "reshape", "contiguous", "flip"}


@dataclass(eq=False, repr=False)
class _Access:
    """An access whose fastest-varying thread index lands on a slow axis of a C-contiguous array."""

    node: ast.AST
    array: str
    text: str
    fast_axis: int
    last: str  # the slower thread index on the last axis


class UncoalescedAccess(Rule):
    id = "WH012"
    name = "uncoalesced-access"
    summary = "fastest-varying thread index used on the slowest axis of a C-contiguous array"
    severity = Severity.WARNING
    priority = 30

    scope = Scope.KERNEL
    reads = frozenset(
        {Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.FUNCS, Fact.STRUCTS, Fact.KERNELS}
    )

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.is_kernel and kernel.has_python_body:
            yield from self._check_kernel(ctx, kernel)

    def _tid_names(self, kernel: KernelDef, types: KernelTypes) -> tuple[ast.Assign, list[str | None]] | None:
        """The single `a, b = wp.tid()` of the kernel and its names (None for `_` or non-names)."""
        if len(types.tid_unpacks) != 1:
            return None
        call, count = types.tid_unpacks[0]
        if count < 2:
            return None
        for node in walk_body(kernel.node):
            if (
                isinstance(node, ast.Assign)
                and node.value is call
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple | ast.List)
            ):
                names = [
                    e.id if isinstance(e, ast.Name) and e.id != "_" else None for e in node.targets[0].elts
                ]
                return node, names
        return None

    def _check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        types = ctx.types(kernel)
        found = self._tid_names(kernel, types)
        if found is None:
            return
        tid_stmt, names = found
        fast = names[-1]
        if fast is None:
            return
        stores: dict[str, int] = {}
        candidate = False  # some access has `fast` on an axis other than the last: worth the full look
        for node in walk_body(kernel.node):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                stores[node.id] = stores.get(node.id, 0) + 1
            elif not candidate and isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
                candidate = any(mentions(e, {fast}) for e in node.slice.elts[:-1])
            elif not candidate and isinstance(node, ast.Call) and len(node.args) > 2:
                candidate = ctx.imports.warp_name(node.func) in _ATOMICS
        if not candidate:
            return
        tid_positions = {n: k for k, n in enumerate(names) if n is not None and stores.get(n) == 1}
        if fast not in tid_positions:
            return
        fast_family = derived_names(kernel, fast)
        params = {p.name: p for p in kernel.params}

        def thread_index(node: ast.expr) -> str | None:
            """The tid variable when ``node`` is `t`, `t + c` or `t - c` with a constant c."""
            if isinstance(node, ast.Name) and node.id in tid_positions:
                return node.id
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
                for var, other in ((node.left, node.right), (node.right, node.left)):
                    if isinstance(node.op, ast.Sub) and var is node.right:
                        continue
                    value = fold(other, ctx.constants.values, ctx.imports)
                    if (
                        isinstance(var, ast.Name)
                        and var.id in tid_positions
                        and isinstance(value, int)
                        and not isinstance(value, bool)
                    ):
                        return var.id
            return None

        uncoalesced: list[_Access] = []
        for node in walk_body(kernel.node):
            indices: list[ast.expr] | None = None
            base: ast.expr | None = None
            if isinstance(node, ast.Subscript):
                base = node.value
                indices = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            elif isinstance(node, ast.Call):
                warp = ctx.imports.warp_name(node.func)
                if warp in _ATOMICS and node.args:
                    base = node.args[0]
                    array_type = types.of(base)
                    ndim = array_type.ndim if isinstance(array_type, Array) else None
                    indices = list(node.args[1 : 1 + ndim]) if ndim is not None else None
                elif any(
                    mentions(a, fast_family) for a in [*node.args, *(k.value for k in node.keywords)]
                ) and self._may_access_memory(ctx, types, node, warp):
                    return  # j goes where the rule cannot see (a @wp.func, tile_load, ...): may be coalesced
            if indices is None or base is None:
                continue
            if any(isinstance(i, ast.Slice) for i in indices):
                if any(mentions(i, fast_family) for i in indices):
                    return
                continue
            base_type = types.of(base)
            if isinstance(base_type, Vector | Matrix | Quaternion | Transform | Scalar) or not indices:
                continue  # a vector or matrix component: a register, not memory
            if mentions(indices[-1], fast_family):
                return  # something is indexed along its last axis by j: this mapping is used coalesced
            if not isinstance(base_type, Array):
                if any(mentions(i, fast_family) for i in indices):
                    return  # unknown container indexed with j
                continue
            if len(indices) < base_type.ndim:
                if any(mentions(i, fast_family) for i in indices):
                    return  # a view `a[j]` whose later use the rule does not follow
                continue
            if (
                not isinstance(base, ast.Name)
                or base.id not in params
                or base_type.kind != "array"
                or base_type.ndim < 2
                or len(indices) != base_type.ndim
            ):
                if any(mentions(i, fast_family) for i in indices):
                    return
                continue
            axes = [thread_index(i) for i in indices]
            if any(a is None for a in axes) or fast not in axes or axes[-1] == fast:
                if any(mentions(i, fast_family) for i in indices):
                    return
                continue
            last = axes[-1]
            assert last is not None  # a slower thread index (fast is the last one unpacked)
            uncoalesced.append(_Access(node, base.id, ctx.source_of(node), axes.index(fast), last))
        if not uncoalesced or not self._launches_allow(ctx, kernel, names, {a.array for a in uncoalesced}):
            return
        unpacked = ", ".join(n or "_" for n in names)
        swapped = (
            ", ".join(n or "_" for n in [names[-1], *names[1:-1], names[0]]) if len(names) == 2 else None
        )
        first = uncoalesced[0]
        arrays = sorted({a.array for a in uncoalesced}, key=[a.array for a in uncoalesced].index)
        related = [
            Related(
                ctx.location(tid_stmt, kernel.name),
                f"`{fast}` is the last name of `{unpacked} = wp.tid()`: consecutive threads differ in it",
            )
        ]
        related += [
            Related(ctx.location(a.node, kernel.name), f"`{a.text}` is strided the same way")
            for a in uncoalesced[1:]
        ]
        listed = ", ".join(f"`{a}`" for a in arrays)
        hint = (
            f"unpack `{swapped} = wp.tid()` and swap the launch dims so that `{first.last}` varies fastest"
            if swapped
            else "reorder the `wp.tid()` names (and the launch dims with them) so that the last name indexes "
            "the last axis"
        ) + f", or store {listed} transposed"
        axis_word = "the first axis" if first.fast_axis == 0 else f"axis {first.fast_axis}"
        others = (
            f" ({len(uncoalesced) - 1} more access{'es' if len(uncoalesced) > 2 else ''} like it)"
            if len(uncoalesced) > 1
            else ""
        )
        yield self.report(
            ctx,
            first.node,
            f"`{first.text}` indexes {axis_word} of `{first.array}` with `{fast}`, the fastest-varying "
            f"thread index, and its last axis with `{first.last}`: consecutive threads access elements a row "
            f"apart (uncoalesced memory access){others}; no access in `{kernel.name}` is coalesced",
            kernel=kernel.name,
            expected=f"`{fast}` on the last axis",
            actual=first.text,
            hint=hint,
            related=related,
        )

    def _may_access_memory(
        self, ctx: RuleContext, types: KernelTypes, call: ast.Call, warp: str | None
    ) -> bool:
        """Whether a call that receives a j-derived value might access an array with it."""
        func = call.func
        if (
            warp is None
            and isinstance(func, ast.Name)
            and func.id in _PY_PURE
            and func.id not in ctx.funcs
            and func.id not in ctx.imports.objects
        ):
            return False
        if warp is None:
            return True  # a @wp.func, or something unknown
        return any(isinstance(types.of(a), Array) for a in call.args) or any(
            isinstance(types.of(k.value), Array) for k in call.keywords
        )

    def _launches_allow(
        self, ctx: RuleContext, kernel: KernelDef, names: list[str | None], arrays: set[str]
    ) -> bool:
        """No launch in the file makes the pattern harmless or the layout unknown."""
        threshold = ctx.profile.warp_size if ctx.profile.warp_size > 1 else 16
        for site in ctx.launches_of(kernel):
            if launch_kernel(ctx, site) is not kernel:
                continue
            dim_node = site.dim
            if isinstance(dim_node, ast.Name) and dim_node.id in site.local_aliases:
                dim_node = site.local_aliases[dim_node.id]
            if (
                isinstance(dim_node, ast.Tuple | ast.List)
                and len(dim_node.elts) >= len(names)
                and not any(isinstance(e, ast.Starred) for e in dim_node.elts)
            ):
                fast_extent = site.fold(dim_node.elts[len(names) - 1], ctx.constants.values, ctx.imports)
                if (
                    isinstance(fast_extent, int)
                    and not isinstance(fast_extent, bool)
                    and fast_extent < threshold
                ):
                    return False
            else:
                dim = site.fold(site.dim, ctx.constants.values, ctx.imports)
                if isinstance(dim, tuple) and len(dim) >= len(names):
                    fast_extent = dim[len(names) - 1]
                    if (
                        isinstance(fast_extent, int)
                        and not isinstance(fast_extent, bool)
                        and fast_extent < threshold
                    ):
                        return False
            if site.tiled and len(names) > (dim_rank(site, ctx.constants.values, ctx.imports) or 0):
                block = site.fold(site.block_dim, ctx.constants.values, ctx.imports)
                if isinstance(block, int) and not isinstance(block, bool) and block < threshold:
                    return False
            args = launch_arguments(site)
            if args is None or len(args) != len(kernel.params):
                continue
            for arg, param in zip(args, kernel.params, strict=True):
                if param.name not in arrays:
                    continue
                for node in ast.walk(arg):
                    if isinstance(node, ast.Attribute) and node.attr in _VIEW_ATTRIBUTES:
                        return False
                    if isinstance(node, ast.Subscript):
                        return False
        return True
