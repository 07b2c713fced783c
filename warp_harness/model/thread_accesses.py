"""Array accesses indexed by a thread index, and what a launch says about them.

What the launch-extent rules (WH050-WH054) read of a kernel: each subscript of an array parameter whose
index along some axis is a thread index from ``wp.tid()`` plus a constant (``a[i]``, ``a[w, i + 2]``),
whether any condition of the kernel looks at that index (a guard), the batched indices the kernel computes
(``w % a.shape[0]``), and, for one launch site, the arguments and the shapes (`warp_harness.model.shapes`)
with the dim's rank checked against the kernel's ``wp.tid()``.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

from warp_harness.model.constants import Value
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import body_index, full_body_index
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


class _KernelFacts:
    """What the launch-extent rules read of one kernel, each computed once for all of them."""

    __slots__ = ("accesses", "conditions", "counts", "derived", "edges")

    def __init__(self) -> None:
        self.counts: dict[str, int] | None = None
        self.accesses: list[ThreadAccess] | None = None
        # (the imports they were read with, the names)
        self.conditions: tuple[ImportMap, frozenset[str]] | None = None
        self.edges: list[tuple[frozenset[str], frozenset[str]]] | None = None
        self.derived: dict[str, frozenset[str]] = {}


# per kernel node: (the body index read, the facts) of the latest call (see `_facts`)
_FACTS: weakref.WeakKeyDictionary[ast.AST, tuple[object, _KernelFacts]] = weakref.WeakKeyDictionary()


def _facts(kernel: ast.FunctionDef) -> _KernelFacts:
    """The kernel's facts, made again when `body_index` changes (a constant decides another branch)."""
    index = body_index(kernel)
    cached = _FACTS.get(kernel)
    if cached is not None and cached[0] is index:
        return cached[1]
    facts = _KernelFacts()
    _FACTS[kernel] = (index, facts)
    return facts


def _binding_counts(kernel: ast.FunctionDef) -> dict[str, int]:
    facts = _facts(kernel)
    if facts.counts is None:
        counts: dict[str, int] = {}
        for arg in kernel.args.args:
            counts[arg.arg] = counts.get(arg.arg, 0) + 1
        index = full_body_index(kernel)
        for node in index.of(ast.Name):
            if isinstance(node.ctx, ast.Store | ast.Del):
                counts[node.id] = counts.get(node.id, 0) + 1
        for arg in index.of(ast.arg):
            counts[arg.arg] = counts.get(arg.arg, 0) + 1
        facts.counts = counts
    return facts.counts


def stored_once(kernel: ast.FunctionDef, names: set[str]) -> set[str]:
    """Those of ``names`` bound exactly once in the kernel (a parameter, or one assignment)."""
    counts = _binding_counts(kernel)
    return {n for n in names if counts.get(n) == 1}


def thread_accesses(kernel: KernelDef, tids: ThreadIndices) -> list[ThreadAccess]:
    """Every subscript of an array parameter in the body Warp compiles whose index along some axis is a
    thread index (bound once) plus a constant, in source order; the array must be bound once too."""
    facts = _facts(kernel.node)
    if facts.accesses is None:
        facts.accesses = _thread_accesses(kernel, tids)
    return facts.accesses


def _thread_accesses(kernel: KernelDef, tids: ThreadIndices) -> list[ThreadAccess]:
    arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
    if not arrays or not tids.tid_vars:
        return []
    found: list[ThreadAccess] = []
    steady: set[str] | None = None
    for sub in body_index(kernel.node).of(ast.Subscript):
        array = sub.value
        if not isinstance(array, ast.Name) or array.id not in arrays or isinstance(sub.ctx, ast.Del):
            continue
        for position, index in enumerate(subscript_indices(sub)):
            offset = _offset_of(index, tids.tid_vars)
            if offset is None:
                continue
            if steady is None:
                steady = stored_once(kernel.node, arrays | set(tids.tid_vars))
            if offset[0] not in steady or array.id not in steady:
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


def unguarded(kernel: KernelDef, imports: ImportMap, access: ThreadAccess) -> bool:
    """No condition of the kernel (`condition_names`) looks at the access's array, its thread index or a
    value computed from the index."""
    facts = _facts(kernel.node)
    if facts.conditions is None or facts.conditions[0] is not imports:
        facts.conditions = (imports, condition_names(kernel, imports))
    conditions = facts.conditions[1]
    if access.array in conditions:
        return False
    derived = facts.derived.get(access.tid)
    if derived is None:
        derived = facts.derived[access.tid] = _derived(kernel.node, facts, access.tid)
    return conditions.isdisjoint(derived)


def _derived(kernel: ast.FunctionDef, facts: _KernelFacts, seed: str) -> frozenset[str]:
    """``seed`` and every local computed (directly or not) from it."""
    if facts.edges is None:
        index = body_index(kernel)
        pairs: list[tuple[ast.AST, list[ast.expr]]] = [(n.value, n.targets) for n in index.of(ast.Assign)]
        pairs += [(n.value, [n.target]) for n in index.of(ast.AugAssign)]
        pairs += [(n.value, [n.target]) for n in index.of(ast.AnnAssign) if n.value is not None]
        pairs += [(n.iter, [n.target]) for n in index.of(ast.For)]
        pairs += [(n.value, [n.target]) for n in index.of(ast.NamedExpr)]
        edges = []
        for value, targets in pairs:
            sources = frozenset(n.id for n in walk(value) if isinstance(n, ast.Name))
            stored = frozenset(n.id for t in targets for n in walk(t) if isinstance(n, ast.Name))
            if sources and stored:
                edges.append((sources, stored))
        facts.edges = edges
    tainted = {seed}
    changed = True
    while changed:
        changed = False
        for sources, stored in facts.edges:
            if not stored <= tainted and not sources.isdisjoint(tainted):
                tainted |= stored
                changed = True
    return frozenset(tainted)


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
