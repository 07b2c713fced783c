"""Array accesses indexed by a thread index, and what a launch says about them.

What the launch-extent rules (WH050-WH054) read of a kernel: each subscript of an array parameter whose
index along some axis is a thread index from ``wp.tid()`` plus a constant (``a[i]``, ``a[w, i + 2]``),
whether any condition of the kernel looks at that index (a guard), the batched indices the kernel computes
(``w % a.shape[0]``), and, for one launch site, the arguments and the shapes (`warp_harness.model.shapes`)
with the dim's rank checked against the kernel's ``wp.tid()``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from warp_harness.model.constants import Value
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import body_index
from warp_harness.model.inference import ThreadIndices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launch_dims import dim_rank
from warp_harness.model.launches import LaunchSite
from warp_harness.model.shapes import ShapeEnv, launch_env, param_ranks
from warp_harness.model.types import Array
from warp_harness.model.walk import walk

# builtins choosing a value by a condition, and builtins that clamp an index into a range
_SELECTS = {"where", "select"}


@dataclass(frozen=True)
class ThreadAccess:
    """``array[..., tid + offset, ...]``: the index at ``position`` is a thread index plus a constant."""

    node: ast.Subscript
    array: str
    position: int  # the array's axis
    tid: str
    tid_axis: int  # the launch dim's axis the thread index counts
    offset: int
    write: bool


def subscript_indices(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _offset_of(index: ast.expr, tids: Mapping[str, int]) -> tuple[str, int] | None:
    """(tid, c) when ``index`` is ``tid``, ``tid + c``, ``c + tid`` or ``tid - c`` with an integer ``c``."""
    if isinstance(index, ast.Name) and index.id in tids:
        return index.id, 0
    if isinstance(index, ast.BinOp) and isinstance(index.op, ast.Add | ast.Sub):
        pairs = [(index.left, index.right)]
        if isinstance(index.op, ast.Add):
            pairs.append((index.right, index.left))
        for name, const in pairs:
            if (
                isinstance(name, ast.Name)
                and name.id in tids
                and isinstance(const, ast.Constant)
                and type(const.value) is int
            ):
                return name.id, const.value if isinstance(index.op, ast.Add) else -const.value
    return None


def stored_once(kernel: ast.FunctionDef, names: set[str]) -> set[str]:
    """Those of ``names`` bound exactly once in the kernel (a parameter, or one assignment)."""
    counts: dict[str, int] = {}
    for arg in kernel.args.args:
        counts[arg.arg] = counts.get(arg.arg, 0) + 1
    for node in walk(kernel):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.arg) and node not in kernel.args.args:
            counts[node.arg] = counts.get(node.arg, 0) + 1
    return {n for n in names if counts.get(n) == 1}


def thread_accesses(kernel: KernelDef, tids: ThreadIndices) -> list[ThreadAccess]:
    """Every subscript of an array parameter in the body Warp compiles whose index along some axis is a
    thread index (bound once) plus a constant, in source order; the array must be bound once too."""
    arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
    if not arrays or not tids.tid_vars:
        return []
    steady = stored_once(kernel.node, arrays | set(tids.tid_vars))
    found: list[ThreadAccess] = []
    for sub in body_index(kernel.node).of(ast.Subscript):
        array = sub.value
        if not isinstance(array, ast.Name) or array.id not in arrays or array.id not in steady:
            continue
        if isinstance(sub.ctx, ast.Del):
            continue
        for position, index in enumerate(subscript_indices(sub)):
            offset = _offset_of(index, tids.tid_vars)
            if offset is None or offset[0] not in steady:
                continue
            found.append(
                ThreadAccess(
                    sub,
                    array.id,
                    position,
                    offset[0],
                    tids.tid_vars[offset[0]],
                    offset[1],
                    isinstance(sub.ctx, ast.Store),
                )
            )
    found.sort(key=lambda a: (a.node.lineno, a.node.col_offset, a.position))
    return found


def condition_names(kernel: KernelDef, imports: ImportMap) -> frozenset[str]:
    """Every name a condition of the kernel looks at: ``if``/``while``/conditional-expression and assert
    tests, the operands of ``and``/``or``, the condition of ``wp.where``/``wp.select``, and the arguments of
    ``min``/``max``/``clamp`` (which keep an index in range). An index none of these mention is unguarded."""
    names: set[str] = set()
    tests: list[ast.AST] = []
    index = body_index(kernel.node)
    tests += [n.test for n in index.of(ast.If)]
    tests += [n.test for n in index.of(ast.While)]
    tests += [n.test for n in index.of(ast.IfExp)]
    tests += [n.test for n in index.of(ast.Assert)]
    tests += list(index.of(ast.BoolOp))
    for call in index.of(ast.Call):
        name = imports.warp_name(call.func)
        if name is None and isinstance(call.func, ast.Name):
            name = call.func.id
        if name in _SELECTS and call.args:
            tests.append(call.args[0])
        elif name in ("min", "max", "clamp"):
            tests.extend(call.args)
    for test in tests:
        names.update(n.id for n in walk(test) if isinstance(n, ast.Name))
    return frozenset(names)


def batched_indices(kernel: KernelDef, tids: ThreadIndices) -> dict[tuple[str, str, int], ast.BinOp]:
    """``(tid, array, k) -> the expression`` for each ``tid % array.shape[k]`` in the kernel: the kernel's own
    word that ``array`` may hold fewer entries along axis ``k`` than the launch has threads (an array shared
    by all worlds, shape ``(1, n)``, or batched per world)."""
    found: dict[tuple[str, str, int], ast.BinOp] = {}
    for node in body_index(kernel.node).of(ast.BinOp):
        if not isinstance(node.op, ast.Mod) or not isinstance(node.left, ast.Name):
            continue
        if node.left.id not in tids.tid_vars:
            continue
        right = node.right
        if (
            isinstance(right, ast.Subscript)
            and isinstance(right.value, ast.Attribute)
            and right.value.attr == "shape"
            and isinstance(right.value.value, ast.Name)
            and isinstance(right.slice, ast.Constant)
            and type(right.slice.value) is int
        ):
            found.setdefault((node.left.id, right.value.value.id, right.slice.value), node)
    return found


def batched_names(kernel: KernelDef, batched: Mapping[tuple[str, str, int], ast.BinOp]) -> dict[int, str]:
    """id(batched expression) -> the local assigned it once (``qpos0_id = worldid % qpos0.shape[0]``)."""
    wanted = {id(node) for node in batched.values()}
    names: dict[int, str] = {}
    for assign in body_index(kernel.node).of(ast.Assign):
        if (
            id(assign.value) in wanted
            and len(assign.targets) == 1
            and isinstance(assign.targets[0], ast.Name)
        ):
            names[id(assign.value)] = assign.targets[0].id
    once = stored_once(kernel.node, set(names.values()))
    return {key: name for key, name in names.items() if name in once}


@dataclass(frozen=True)
class LaunchShapes:
    """A launch site of a kernel with its arguments (one per parameter), shapes and dim rank."""

    site: LaunchSite
    args: list[ast.expr]
    env: ShapeEnv
    rank: int

    def argument(self, kernel: KernelDef, param: str) -> ast.expr:
        position = next(k for k, p in enumerate(kernel.params) if p.name == param)
        return self.args[position]


def launch_shapes(
    site: LaunchSite,
    kernel: KernelDef,
    tids: ThreadIndices,
    constants: Mapping[str, Value],
    imports: ImportMap,
) -> LaunchShapes | None:
    """What the launch-extent rules ask of ``site``; None when its arguments are not a literal list matching
    the kernel's parameters, or its dim's rank is not that of the kernel's ``wp.tid()``."""
    call = site.node
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return None
    inputs = site.argument_list("inputs")
    outputs = site.argument_list("outputs")
    if inputs is None or outputs is None:
        return None
    args = [*inputs, *outputs]
    if len(args) != len(kernel.params):
        return None
    env = launch_env(site, constants, imports, param_ranks(kernel))
    names = max((n for _, n in tids.tid_unpacks), default=0)
    rank = env.dim_rank()
    if rank is None:
        rank = dim_rank(site, constants, imports)
    if rank is None or names not in ((rank, rank + 1) if site.tiled else (rank,)):
        return None
    return LaunchShapes(site, args, env, rank)
