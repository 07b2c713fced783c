"""## WH011 unguarded-write

A kernel indexes an array with a thread index from `wp.tid()` — a write `a[i] = ...` or a read
`x = a[i]` — has no bounds guard on that index, and is launched with a `dim` that is provably larger
than the array's extent along the indexed axis. The spellings followed (`warp_harness.model.shapes`):
`a = wp.zeros(n)` (or `wp.zeros((n, m))`, `wp.empty_like(b)`, `wp.array(np_arr)`, a `self.` field
allocated once in the class) launched with `dim=n + 1`; an array `a` that is a parameter of the
launching function launched with `dim=a.shape[0] + 1` or `len(a) + 1`; `dim=img.shape` against another
array's extents; a dim rounded up to whole blocks, `((n + 255) // 256) * 256` or `blocks * 256` with
`blocks = (n + 255) // 256`, against an array of `n` elements (a warning: it is in bounds only when `n`
is a multiple of 256). Any other relation, a host name bound more than once (or by a loop) in the
launching function, and any `if`/`while`, conditional expression or early `return` in the kernel that
looks at the index (or at anything computed from it) keeps the rule quiet, and so do launches recorded
for later (`record_cmd=True`: `set_dim` may change their size).

### Why it matters
The extra threads read or write past the end of the array. Warp does not check bounds in release
builds: on the CPU a write past the end corrupts the heap and the process may abort at exit (SIGABRT)
or crash (SIGSEGV), a read returns whatever lies behind the array (the next allocation's values), and
on a GPU other allocations are silently overwritten or read. Only debug mode
(`wp.config.mode = "debug"`, or `wp.set_module_options({"mode": "debug"})`) reports it:
`Assertion failed: 'i >= -arr.shape[0] && i < arr.shape[0]'`, after which the process dies (SIGILL).

The fix inserts an early-return guard right after the `wp.tid()` line.

### Bad
```python
@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0

a = wp.zeros(n, dtype=float)
wp.launch(fill, dim=n + 1, inputs=[a])
```

### Good
```python
@wp.kernel
def fill(a: wp.array(dtype=float)):
    i = wp.tid()
    if i >= a.shape[0]:
        return
    a[i] = 1.0
```
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections.abc import Container, Iterator
from dataclasses import dataclass, replace

from warp_harness.kernel_judgements import judged
from warp_harness.model.index import body_index, child_nodes, dropped_nodes, full_body_index
from warp_harness.model.inference import ThreadIndices, thread_indices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launch_dims import dim_rank
from warp_harness.model.launches import LaunchSite
from warp_harness.model.shapes import Comparison, Cover, Extent, ShapeEnv, compare, launch_env, param_ranks
from warp_harness.model.types import Array
from warp_harness.model.walk import walk
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import (
    deferred_launch,
    empty_launch,
    iter_statements,
    kernel_location,
    kernel_model,
    launch_arguments,
    launch_kernel,
    launched_elsewhere,
    launches_of,
)

_ATOMIC_WRITES = {
    "atomic_add",
    "atomic_sub",
    "atomic_min",
    "atomic_max",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "atomic_cas",
    "atomic_exch",
    "array_store",
}
# builtins choosing between values by a condition: an access in them may be guarded by it
_SELECTS = {"where", "select"}

# statements with expressions after their blocks (decorators, handlers' exception types, match cases), and
# f-strings (the positions of their expressions are not reliable before Python 3.12)
_OWNERS_OUT_OF_ORDER = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Try,
    ast.Match,
    ast.JoinedStr,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


@dataclass
class _Access:
    """A write into an array by index."""

    stmt: ast.stmt
    target: ast.Subscript
    array: str
    tid_var: str
    axis: int  # position of the tid variable in wp.tid()'s unpacking
    position: int  # which index of the subscript (the array's axis)
    write: bool


@dataclass(frozen=True)
class _Launch:
    """A launch site with its arguments, shapes and dim rank, as every access of the kernel reads them."""

    site: LaunchSite
    args: list[ast.expr]
    env: ShapeEnv
    rank: int


def _stored_names(kernel: ast.FunctionDef, wanted: Container[str]) -> dict[str, int]:
    """How often each name of ``wanted`` is bound in the kernel (stored or deleted, or a parameter, of the
    kernel or of a lambda in it)."""
    counts: dict[str, int] = {}
    index = full_body_index(kernel)
    outside = walk(kernel.args)
    for node in [*index.of(ast.Name), *(n for n in outside if isinstance(n, ast.Name))]:
        if node.id in wanted and isinstance(node.ctx, ast.Store | ast.Del):
            counts[node.id] = counts.get(node.id, 0) + 1
    for arg in [*index.of(ast.arg), *(n for n in outside if isinstance(n, ast.arg))]:
        if arg.arg in wanted:
            counts[arg.arg] = counts.get(arg.arg, 0) + 1
    return counts


# the fields `_statement_parents` reads, and which of them each kind of statement has
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_BLOCKS: dict[type[ast.AST], tuple[str, ...]] = {}


def _statement_parents(body: list[ast.stmt]) -> dict[int, ast.stmt]:
    """id(statement) -> the statement whose block holds it, for every statement below ``body`` (every
    kind of block, ``match`` cases included)."""
    parents: dict[int, ast.stmt] = {}
    stack: list[ast.stmt] = list(body)
    while stack:
        stmt = stack.pop()
        fields = _BLOCKS.get(type(stmt))
        if fields is None:
            fields = _BLOCKS[type(stmt)] = tuple(f for f in _BLOCK_FIELDS if f in type(stmt)._fields)
        if not fields:
            continue  # a simple statement (most of them)
        blocks: list[list[ast.stmt]] = []
        for field in ("body", "orelse", "finalbody"):
            if field in fields:
                block = getattr(stmt, field, None)
                if isinstance(block, list):
                    blocks.append(block)
        if "handlers" in fields:
            blocks.extend(h.body for h in getattr(stmt, "handlers", None) or [])
        if "cases" in fields:
            blocks.extend(c.body for c in getattr(stmt, "cases", None) or [])
        for block in blocks:
            for inner in block:
                if isinstance(inner, ast.stmt):
                    parents[id(inner)] = stmt
                    stack.append(inner)
    return parents


class _Derived:
    """`queries.derived_names` for one kernel, with its assignments read once for every seed."""

    def __init__(self, kernel: ast.FunctionDef) -> None:
        index = body_index(kernel)
        self._edges: list[tuple[frozenset[str], frozenset[str]]] = []
        self._found: dict[str, set[str]] = {}
        for node in index.of(ast.Assign):
            self._edge(node.value, node.targets)
        for aug in index.of(ast.AugAssign):
            self._edge(aug.value, [aug.target])
        for annotated in index.of(ast.AnnAssign):
            if annotated.value is not None:
                self._edge(annotated.value, [annotated.target])
        for loop in index.of(ast.For):
            self._edge(loop.iter, [loop.target])
        for named in index.of(ast.NamedExpr):
            self._edge(named.value, [named.target])

    def _edge(self, value: ast.expr, targets: list[ast.expr]) -> None:
        if type(value) is ast.Constant:
            return  # no source
        if type(value) is ast.Name:
            sources = frozenset((value.id,))
        else:
            sources = frozenset(n.id for n in walk(value) if isinstance(n, ast.Name))
        if len(targets) == 1 and type(targets[0]) is ast.Name:  # the common `x = ...`, without a walk
            target = targets[0]
            stored = frozenset((target.id,)) if isinstance(target.ctx, ast.Store) else frozenset()
        else:
            stored = frozenset(
                n.id
                for t in targets
                for n in walk(t)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
        if sources and stored:
            self._edges.append((sources, stored))

    def of(self, seed: str) -> set[str]:
        """``seed`` and every local computed (directly or not) from it."""
        found = self._found.get(seed)
        if found is None:
            tainted = {seed}
            changed = True
            while changed:
                changed = False
                for sources, stored in self._edges:
                    if not stored <= tainted and not sources.isdisjoint(tainted):
                        tainted |= stored
                        changed = True
            found = self._found[seed] = tainted
        return found


class _Guards:
    """`guarded` over one kernel's statements, with what it reads of each statement (the statements inside
    it, whether it may leave, the names of its conditions) worked out once: every candidate access asks
    about every statement before it again."""

    def __init__(self, kernel: ast.FunctionDef) -> None:
        self._parents = _statement_parents(kernel.body)
        # the ids of the statements holding a return, break or continue (themselves included)
        self._exits: set[int] = set()
        index = full_body_index(kernel)
        for exit_stmt in [*index.of(ast.Return), *index.of(ast.Break), *index.of(ast.Continue)]:
            current: ast.stmt | None = exit_stmt
            while current is not None and id(current) not in self._exits:
                self._exits.add(id(current))
                current = self._parents.get(id(current))
        # id(target) -> the ids of the statements holding it (itself included)
        self._holders: dict[int, set[int]] = {}
        # id(stmt) -> the names of each `if`/`while`/conditional-expression test in it
        self._tests: dict[int, list[frozenset[str]]] = {}
        # id(expression) -> the names it mentions
        self._names: dict[int, frozenset[str]] = {}
        # id(stmt) -> id(node) -> its parent, for the nodes of the statement
        self._node_parents: dict[int, dict[int, ast.AST]] = {}

    def names_in(self, node: ast.AST) -> frozenset[str]:
        found = self._names.get(id(node))
        if found is None:
            found = self._names[id(node)] = frozenset(n.id for n in walk(node) if isinstance(n, ast.Name))
        return found

    def mentions(self, node: ast.AST, names: set[str]) -> bool:
        return not self.names_in(node).isdisjoint(names)

    def _holds(self, stmt: ast.stmt, target: ast.stmt) -> bool:
        holders = self._holders.get(id(target))
        if holders is None:
            holders = self._holders[id(target)] = set()
            current: ast.stmt | None = target
            while current is not None:
                holders.add(id(current))
                current = self._parents.get(id(current))
        return id(stmt) in holders

    def _exit_tests(self, stmt: ast.stmt) -> list[frozenset[str]]:
        found = self._tests.get(id(stmt))
        if found is None:
            conditions = (n for n in walk(stmt) if isinstance(n, ast.If | ast.While | ast.IfExp))
            found = self._tests[id(stmt)] = [self.names_in(n.test) for n in conditions]
        return found

    def node_parents(self, stmt: ast.stmt) -> dict[int, ast.AST]:
        """id(node) -> its parent, for every node below ``stmt``."""
        parents = self._node_parents.get(id(stmt))
        if parents is None:
            parents = self._node_parents[id(stmt)] = {}
            for node in walk(stmt):
                for child in child_nodes(node):
                    parents[id(child)] = node
        return parents

    def guarded(self, body: list[ast.stmt], target: ast.stmt, names: set[str]) -> bool | None:
        """Whether ``target`` (inside ``body``) is behind a condition on ``names``; None if not in
        ``body``."""
        for stmt in body:
            if stmt is target:
                return False
            # ``target`` comes from `iter_statements`: it is inside ``stmt`` only if reached the same way
            if self._holds(stmt, target):
                inner: list[list[ast.stmt]] = []
                if isinstance(stmt, ast.If | ast.While):
                    if self.mentions(stmt.test, names):
                        return True
                    inner = [stmt.body, stmt.orelse]
                elif isinstance(stmt, ast.For):
                    inner = [stmt.body, stmt.orelse]
                elif isinstance(stmt, ast.With | ast.Try):
                    inner = [getattr(stmt, "body", [])]
                for block in inner:
                    found = self.guarded(block, target, names)
                    if found is not None:
                        return found
                return None
            # an earlier statement that may leave the kernel (or the loop) depending on the index
            if id(stmt) in self._exits and any(not test.isdisjoint(names) for test in self._exit_tests(stmt)):
                return True
            if isinstance(stmt, ast.Assert) and self.mentions(stmt.test, names):
                return True
        return None


def _own_expressions(stmt: ast.stmt) -> list[ast.AST]:
    """The expressions of ``stmt`` itself (not those of the statements nested in its blocks)."""
    found: list[ast.AST] = []
    for _, value in ast.iter_fields(stmt):
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, ast.expr | ast.withitem | ast.keyword | ast.arguments):
                found.append(item)
    return found


def _expression_guarded(
    ctx: RuleContext, kernel: KernelDef, guards: _Guards, stmt: ast.stmt, node: ast.AST, names: set[str]
) -> bool:
    """An access inside a conditional expression, a short-circuit operand or a ``wp.where``/``wp.select``
    whose condition looks at ``names`` (read as guarded: no false alarm on ``a[i] if i < n else 0.0``)."""
    parents = guards.node_parents(stmt)
    child: ast.AST = node
    current = parents.get(id(node))
    imports = kernel_model(ctx, kernel).imports
    while current is not None and current is not stmt:
        if isinstance(current, ast.IfExp) and child is not current.test:
            if guards.mentions(current.test, names):
                return True
        if isinstance(current, ast.BoolOp):
            for value in current.values:
                if value is child:
                    break
                if guards.mentions(value, names):
                    return True
        if isinstance(current, ast.Call) and imports.warp_name(current.func) in _SELECTS:
            if current.args and current.args[0] is not child and guards.mentions(current.args[0], names):
                return True
        child, current = current, parents.get(id(current))
    return False


def _block_after(body: list[ast.stmt], stmt: ast.stmt) -> ast.stmt | None:
    """The statement following ``stmt`` in whichever block of ``body`` holds it."""
    for position, current in enumerate(body):
        if current is stmt:
            return body[position + 1] if position + 1 < len(body) else None
        for field in ("body", "orelse", "finalbody"):
            block = getattr(current, field, None)
            if isinstance(block, list):
                found = _block_after(block, stmt)
                if found is not None:
                    return found
    return None


def _indices(target: ast.Subscript) -> list[ast.expr]:
    return list(target.slice.elts) if isinstance(target.slice, ast.Tuple) else [target.slice]


_Candidate = tuple[ast.stmt, ast.Subscript, str, ast.Name, int, bool]


def _candidates(kernel: ast.FunctionDef, arrays: Container[str], tids: Container[str]) -> list[_Candidate]:
    """Each access ``a[..., i, ...]`` to an array parameter by a thread index, in a statement Warp may
    compile: the statement, the subscript, the array, the index, its position, and whether it is a write
    (the subscript an assignment stores to; every other subscript that is read)."""
    index = full_body_index(kernel)
    wanted: list[tuple[ast.Subscript, str, list[tuple[int, ast.Name]]]] = []
    for sub in index.of(ast.Subscript):
        array = sub.value
        if not isinstance(array, ast.Name) or array.id not in arrays or isinstance(sub.ctx, ast.Del):
            continue
        indices = [(k, i) for k, i in enumerate(_indices(sub)) if isinstance(i, ast.Name) and i.id in tids]
        if indices:
            wanted.append((sub, array.id, indices))
    if not wanted:
        return []
    if any(index.of(kind) for kind in _OWNERS_OUT_OF_ORDER):
        return _walked_candidates(kernel, arrays, tids)
    # the statement an access belongs to is the last one starting before it
    dropped = dropped_nodes(kernel)
    found: list[tuple[tuple[int, bool, int], _Candidate]] = []
    for sub, array_name, indices in wanted:
        stmt = _owner(kernel.body, sub, dropped)
        if stmt is None:
            continue
        write = isinstance(sub.ctx, ast.Store)
        if write and not (
            (isinstance(stmt, ast.Assign) and any(t is sub for t in stmt.targets))
            or (isinstance(stmt, ast.AugAssign) and stmt.target is sub)
        ):
            continue  # stored to by unpacking or a loop: not followed
        for position, name in indices:
            found.append(
                ((stmt.lineno, not write, sub.col_offset), (stmt, sub, array_name, name, position, write))
            )
    # the caller keeps the order of accesses of one line and column; it is the order of `_walked_candidates`
    # (breadth-first in a statement), not the source order, when two of them share a column on two lines of
    # one statement
    seen: dict[tuple[int, bool, int], ast.Subscript] = {}
    for key, (_, sub, *_rest) in found:
        if seen.setdefault(key, sub) is not sub:
            return _walked_candidates(kernel, arrays, tids)
    return [candidate for _, candidate in found]


def _start(node: ast.stmt | ast.expr) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _owner(body: list[ast.stmt], node: ast.expr, dropped: frozenset[int]) -> ast.stmt | None:
    """The statement of ``body`` (or of a block in it) whose own expressions hold ``node``: the last one
    starting before it, in the last block starting before it (blocks and their statements are in source order,
    and a statement's expressions come before its blocks, `_OWNERS_OUT_OF_ORDER` aside). None when it is in a
    branch Warp drops (``dropped``, as `iter_statements` skips it)."""
    start = _start(node)
    block = body
    while True:
        position = bisect_right(block, start, key=_start)
        if position == 0:
            return None
        stmt = block[position - 1]
        if id(stmt) in dropped:
            return None
        inner: list[ast.stmt] | None = None
        for field in ("orelse", "body"):
            candidate = getattr(stmt, field, None)
            if candidate and _start(candidate[0]) <= start:
                inner = candidate
                break
        if inner is None:
            return stmt
        block = inner


def _walked_candidates(
    kernel: ast.FunctionDef, arrays: Container[str], tids: Container[str]
) -> list[_Candidate]:
    """`_candidates` by walking each compiled statement's own expressions."""
    candidates: list[_Candidate] = []
    for stmt in iter_statements(kernel.body, dropped_nodes(kernel)):
        stores: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            stores = list(stmt.targets)
        elif isinstance(stmt, ast.AugAssign):
            stores = [stmt.target]
        subscripts: list[tuple[ast.Subscript, bool]] = [
            (t, True) for t in stores if isinstance(t, ast.Subscript)
        ]
        for root in _own_expressions(stmt):
            subscripts.extend(
                (n, False) for n in walk(root) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
            )
        for target, write in subscripts:
            if not isinstance(target.value, ast.Name) or target.value.id not in arrays:
                continue
            for position, index in enumerate(_indices(target)):
                if isinstance(index, ast.Name) and index.id in tids:
                    candidates.append((stmt, target, target.value.id, index, position, write))
    return candidates


class UnguardedWrite(Rule):
    id = "WH011"
    name = "unguarded-write"
    summary = (
        "thread-indexed write or read past the end of an array: launch dim larger than the array, no guard"
    )
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.LAUNCHES, Fact.SCOPES, Fact.KERNELS})
    foreign_launches = True

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        sites = [
            s
            for s in launches_of(ctx, kernel)
            if launch_kernel(ctx, s) is kernel and not deferred_launch(s) and not empty_launch(ctx, s)
        ]
        if not sites:
            return
        defining = kernel_model(ctx, kernel)
        tids = thread_indices(kernel, defining.imports)  # all the rule reads of the kernel's types
        # the kernel alone decides them: judged once per process for every file launching it
        accesses = judged(
            defining, kernel, ("WH011", "accesses"), lambda: self._unguarded_accesses(ctx, kernel, tids)
        )
        if not accesses:
            return
        # whether an access is reported depends only on this key: each is judged once (and reported once:
        # one finding, and one guard, per array, axis and index)
        tried: set[tuple[str, int, int]] = set()
        launched: dict[int, _Launch | None] = {}
        for access in accesses:
            key = (access.array, access.position, access.axis)
            if key in tried:
                continue
            tried.add(key)
            records: list[Record] = []
            for site in sites:
                if id(site) not in launched:
                    launched[id(site)] = self._launch(ctx, kernel, tids, site)
                found = launched[id(site)]
                record = (
                    None if found is None else self._check_site(ctx, kernel, tids, access, found, accesses)
                )
                if record is not None:
                    records.append(record)
            if records:
                records.sort(key=lambda r: r.severity != Severity.ERROR)  # a certain excess first
                first = records[0]
                more = tuple(rel for r in records[1:] for rel in r.related)
                yield replace(first, related=first.related + more) if more else first

    def _unguarded_accesses(
        self, ctx: RuleContext, kernel: KernelDef, tids: ThreadIndices
    ) -> tuple[_Access, ...]:
        """The kernel's thread-indexed accesses no guard covers (from the kernel's own module alone)."""
        params = {p.name: p for p in kernel.params if isinstance(p.type, Array)}
        if not params or not tids.tid_vars:
            return ()
        candidates = _candidates(kernel.node, params, tids.tid_vars)
        if not candidates:
            return ()
        counts: dict[str, int] | None = None
        guards_of = _Guards(kernel.node)
        found: list[_Access] = []
        derived: _Derived | None = None
        everything: set[str] | None = None  # every name of the kernel, made when first needed
        for stmt, target, name, index, position, write in candidates:
            # a guard on the index itself is the common case; only then follow values computed from it
            if guards_of.guarded(kernel.node.body, stmt, {index.id}) is not False:
                continue
            if counts is None:
                # the only names counted: the arrays and thread indices the candidates name
                counts = _stored_names(kernel.node, {*params, *tids.tid_vars})
            if counts.get(name, 0) != 1 or counts.get(index.id) != 1:
                continue  # the array or the index is reassigned in the kernel
            if everything is None:
                everything = {n.id for n in full_body_index(kernel.node).of(ast.Name)} | set(params)
            # no condition on any name of the kernel: none on the names below either (an access guarded by
            # some names is guarded by more), and the values computed from the index need not be followed
            if guards_of.guarded(kernel.node.body, stmt, everything) is False and (
                write or not _expression_guarded(ctx, kernel, guards_of, stmt, target, everything)
            ):
                found.append(_Access(stmt, target, name, index.id, tids.tid_vars[index.id], position, write))
                continue
            if derived is None:
                derived = _Derived(kernel.node)
            # a condition on the index, on a value computed from it, or on the array itself
            # (`if a.shape[0] > 0 and a[i]`: Warp's `and` short-circuits)
            guards = derived.of(index.id) | {name}
            if guards_of.guarded(kernel.node.body, stmt, guards) is not False:
                continue
            if not write and _expression_guarded(ctx, kernel, guards_of, stmt, target, guards):
                continue
            found.append(_Access(stmt, target, name, index.id, tids.tid_vars[index.id], position, write))
        found.sort(key=lambda a: (a.stmt.lineno, not a.write, a.target.col_offset))
        return tuple(found)

    def _launch(
        self, ctx: RuleContext, kernel: KernelDef, tids: ThreadIndices, site: LaunchSite
    ) -> _Launch | None:
        """What every access asks of ``site``; None when its arguments or its dim's rank cannot be matched
        with the kernel."""
        args = launch_arguments(site)
        if args is None or len(args) != len(kernel.params):
            return None
        constants, imports = ctx.constants.values, ctx.imports  # the launch's file
        env = launch_env(site, constants, imports, param_ranks(kernel))
        names = max((n for _, n in tids.tid_unpacks), default=0)
        rank = env.dim_rank()
        if rank is None:
            rank = dim_rank(site, constants, imports)
        if rank is None or names not in ((rank, rank + 1) if site.tiled else (rank,)):
            return None
        return _Launch(site, args, env, rank)

    def _check_site(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        tids: ThreadIndices,
        access: _Access,
        launch: _Launch,
        accesses: tuple[_Access, ...],
    ) -> Record | None:
        site, args, env, rank = launch.site, launch.args, launch.env, launch.rank
        if access.axis >= rank:
            return None
        position = next(k for k, p in enumerate(kernel.params) if p.name == access.array)
        arg = args[position]
        dim = env.dim_value(access.axis)
        if dim is None:
            return None
        verdict: tuple[Comparison, Extent] | None = None
        for extent in env.extents(arg, access.position):
            comparison = compare(dim, extent)
            if comparison.cover in (Cover.EXACT, Cover.WITHIN):
                return None  # one spelling of the extent proves the launch stays inside
            if comparison.cover in (Cover.MORE, Cover.MAYBE_MORE) and verdict is None:
                verdict = (comparison, extent)
        if verdict is None:
            return None
        # (names bound twice or by a loop in the launching function have no value in `shapes`: the two
        # sides then may not be the same number)
        comparison, extent = verdict
        return self._record(ctx, kernel, tids, access, site, accesses, arg, comparison, extent, env)

    def _record(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        tids: ThreadIndices,
        access: _Access,
        site: LaunchSite,
        accesses: tuple[_Access, ...],
        arg: ast.expr,
        comparison: Comparison,
        extent: Extent,
        env: ShapeEnv,
    ) -> Record:
        dim_text = _dim_text(ctx, env, access.axis)
        extent_text = _extent_text(extent)
        arg_text = ctx.source_of(arg)
        element = kernel_model(ctx, kernel).source.node_text(access.target)
        axis = access.position
        along = "" if access.axis == 0 else f", dimension {access.axis}"
        shape = f"{access.array}.shape[{axis}]"
        passed = f"`{access.array}`" if arg_text == access.array else f"`{access.array}` (`{arg_text}`)"
        plural = "s" if extent_text != "1" else ""
        verb = "written" if access.write else "read"
        tid = access.tid_var
        certain = comparison.cover == Cover.MORE
        does = "writes" if access.write else "reads"
        if certain:
            low, high = comparison.low, comparison.high
            if low == high == 1:
                past = f"the last value of `{tid}` {does} out of bounds"
            else:
                count = str(low) if low == high else f"{low}..{high}"
                past = f"the last {count} values of `{tid}` {does[:-1]} out of bounds"
        else:
            past = (
                f"the dim is rounded up past `{extent_text}` (by up to {comparison.high}), so unless "
                f"`{extent_text}` is a multiple of the block the last threads {does[:-1]} out of bounds"
            )
        related = [
            Related(ctx.location(site.node, kernel.name), f"launched here with dim `{dim_text}`{along}")
        ]
        host = site.host_arrays.get(arg.id) if isinstance(arg, ast.Name) else None
        if host is not None:
            related.append(
                Related(
                    ctx.location(host.node, kernel.name),
                    f"`{arg_text}` is allocated here with `{extent_text}` element{plural} along axis {axis}",
                )
            )
        guard = f"if {tid} >= {shape}:"
        message = (
            f"`{element}` is {verb} for every `{tid}` below `{dim_text}` (the launch dim{along}) but "
            f"{passed} has `{extent_text}` element{plural} along axis {axis}: {past}, and the kernel has "
            f"no guard on `{tid}`"
        )
        fix = None
        # a read is marked where it is (several may share a statement with a write)
        anchor: ast.AST = access.stmt if access.write else access.target
        if launched_elsewhere(ctx):  # the kernel may be in another file: report at the launch
            related = [Related(kernel_location(ctx, kernel, access.stmt), f"`{element}` is {verb} here")]
            anchor = site.node
        else:
            fix = self._fix(ctx, kernel, tids, access, accesses, guard)
        return self.report(
            ctx,
            anchor,
            message,
            kernel=kernel.name,
            expected=f"{tid} < {shape} ({extent_text})",
            actual=f"{tid} < {dim_text}",
            hint=f"return early when the index is past the end (`{guard} return` after the `wp.tid()` line), "
            f"or launch with dim `{extent_text}`",
            fix=fix,
            related=related,
            severity=None if certain else Severity.WARNING,
        )

    def _fix(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        tids: ThreadIndices,
        access: _Access,
        accesses: tuple[_Access, ...],
        guard: str,
    ) -> Fix | None:
        tid_stmt = next(
            (
                node
                for node in walk_body(kernel.node)
                if isinstance(node, ast.Assign)
                and any(node.value is call for call, _ in tids.tid_unpacks)
                and access.tid_var
                in {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            ),
            None,
        )
        if tid_stmt is None:
            return None
        following = _block_after(kernel.node.body, tid_stmt)
        if following is None or following.lineno == tid_stmt.end_lineno:
            return None
        line = ctx.source.lines[following.lineno - 1]
        indent = line[: len(line) - len(line.lstrip())]
        if indent.strip():
            return None
        unit = "\t" if indent.startswith("\t") else "    "
        edit = ctx.insert_line_before(following, f"{guard}\n{indent}{unit}return")
        # safe when the guarded-out threads did nothing else but write out of bounds
        others = [
            node
            for node in walk_body(kernel.node)
            if isinstance(node, ast.Call) and ctx.imports.warp_name(node.func) in _ATOMIC_WRITES
        ]
        safe = (
            access.write
            and not others
            and all(a.array == access.array for a in accesses)
            and self._only_writes(kernel, access)
        )
        shape = f"{access.array}.shape[{access.position}]"
        return Fix(f"Return early when `{access.tid_var} >= {shape}`", (edit,), safe=safe)

    def _only_writes(self, kernel: KernelDef, access: _Access) -> bool:
        """Every store in the kernel goes to ``access.array`` at the same thread index on the same axis."""
        for node in walk_body(kernel.node):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    continue
                if (
                    not isinstance(target, ast.Subscript)
                    or not isinstance(target.value, ast.Name)
                    or target.value.id != access.array
                ):
                    return False
                indices = _indices(target)
                index = indices[access.position] if access.position < len(indices) else None
                if not (isinstance(index, ast.Name) and index.id == access.tid_var):
                    return False
        return True


def _dim_text(ctx: RuleContext, env: ShapeEnv, axis: int) -> str:
    """The launch dim's component ``axis`` as written (``n + 2`` of ``(n + 2, 60)``, ``img.shape[1]``)."""
    parts = env.dim_components()
    if parts is None or axis >= len(parts):
        site_dim = env.site.dim if env.site is not None else None
        return ctx.source_of(site_dim) if site_dim is not None else "?"
    part = parts[axis]
    if isinstance(part, tuple):
        return f"{ctx.source_of(part[0])}.shape[{part[1]}]"
    return ctx.source_of(part)


def _extent_text(extent: Extent) -> str:
    """``n``, ``a.shape[0]``, ``n + 2``, ``64`` for a message (the low end of the extent)."""
    parts: list[str] = []
    for symbol, coeff in extent.low.terms:
        k = int(coeff) if coeff == int(coeff) else coeff
        if k == 1:
            parts.append(symbol)
        elif k == -1:
            parts.append(f"-{symbol}")
        else:
            parts.append(f"{k} * {symbol}")
    const = extent.low.const
    c = int(const) if const == int(const) else const
    if c or not parts:
        parts.append(str(c))
    return " + ".join(parts).replace("+ -", "- ")
