"""## WH010 nonatomic-update

A kernel reads an array element, computes with it and stores the result back into the same
element while other threads may do the same to that element: threads interleave between the
read and the write and overwrite each other's updates, a data race. Three ways threads come to
share the element:

- **One element for every thread**: `s[k] = s[k] + x[i]` where the index `k` does not depend on
  the thread (`s[0]`, a parameter, a thread-independent local).
- **An index loaded from memory** (a scatter): a histogram `b = values[i]; bins[b] = bins[b] + 1`
  or `bins[int(x[i] * scale)] = bins[int(x[i] * scale)] + 1.0`, spring or finite-element assembly
  through a connectivity array `j = edges[i, 1]; f[j] = f[j] + force` (the vertices of a mesh are
  shared between its edges, triangles and tetrahedra).
- **A thread-dependent condition** in front of a shared element: a CFL time step
  `if speed > eps: dt[0] = wp.min(dt[0], h / speed)`.

Besides `s[k] = s[k] op e` (and the two-statement form `t = s[k]` ... `s[k] = t + x[i]`), also
reported: a compare-and-store of a shared element, `if d < best[0]: best[0] = d` (two threads pass
the test against the same old value and the later store wins: use `wp.atomic_min(best, 0, d)`),
an augmented assignment Warp does not lower to an atomic, `s[k] *= 2.0` (only `+=`, `-=`, `&=`,
`|=`, `^=` are), and any augmented assignment on an `int8`, `uint8`, `int16` or `uint16` array
(Warp has no atomics for those types).

Not reported:
- `s[k] += x[i]`, `f[j] += force`, `f[j] -= force` on any array Warp has atomics for (scalars,
  vectors, matrices of 32/64-bit types): Warp 1.19 compiles them to `wp.atomic_add` /
  `wp.atomic_sub` (checked against its code generator in the tests), so they are correct.
- `y[i] = y[i] + x[i]` with `i` from `wp.tid()`, and any element one of whose indices is the
  thread's own: `out[bins[i], i]`, `offsets[w] + i`, `start + k` for a loop counter `k` (the
  thread's own segment of a CSR array).
- Plain stores through a loaded index, `out[perm[i]] = x[i]`: no read-modify-write.
- A read-modify-write through an index gathered from a 1-D index array with a per-thread operand,
  `j = perm[i]; out[j] = out[j] + x[i]`: correct when the index array is a permutation or an
  ownership map (each shape has one body, each dof one actuator), which real code relies on.
  Reported only with evidence that threads share the index: the update counts (a
  thread-independent operand, `bins[b] = bins[b] + 1`: counting per key means keys repeat), the
  index is a fixed column of a connectivity row (`edges[i, 1]`, `tris[i][2]`, `e = edges[i]` then
  `e[0]`), or a loaded float rounded to an integer (`int(x[i] * scale)`, `wp.floor`). Integer
  arithmetic on a loaded key (`key // FAMILIES`, `key % n`) keeps the key's standing: real code
  decodes packed keys that way. A helper `@wp.func` that computes a bin is seen only through its
  arguments. A local assigned several times has the weakest origin of its values.
- Updates reached by a single thread (`if i == 0:`), and updates under a condition that may let a
  single thread through: an equality on something thread-dependent (`if owner[j] == i:`,
  `if ids[i] == target:`), a comparison of the thread index (`if i >= n - 1:`), a claim through an
  atomic (`if wp.atomic_add(flag, 0, 1) == 0:`).
- Kernels that never call `wp.tid()` or whose every launch in the file has one thread, kernels
  that take a lock (`wp.atomic_cas` / `wp.atomic_exch`), idempotent updates with a
  thread-independent operand (`s[0] = wp.max(s[0], 1.0)`, `flags[j] = flags[j] | 4`), and
  compare-and-stores of a thread-independent value. An index or condition the checker cannot
  place is never reported.

Severity: an element every thread updates, reached by every thread, is an error on CUDA targets (a
warning on `cpu`, where Warp runs a launch's threads one after another and the result happens to
be right). A race that depends on the data (an index loaded from memory: the keys may all differ;
a thread-dependent condition: one thread may pass it) is a warning.

### Why it matters
The race is silent. On the CPU the threads run in sequence and the result looks right; on a GPU
thousands of threads read the same old value: measured on an H200, 2^20 threads adding 1.0 this
way gave 7.0 instead of 1,048,576. A scatter loses less, and more quietly: a mesh vertex shared by six
triangles keeps some of their forces, so the simulation runs, just wrong. The tests run each shape
on the CPU with real Warp (racy and atomic agree with the serial result there) and, marked `gpu`,
on CUDA with 2^20 colliding threads (the racy kernels lose updates, the atomic fixes do not).

### Bad
```python
@wp.kernel
def total(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] = s[0] + x[i]
```

### Good
```python
@wp.kernel
def total(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] += x[i]                    # or: wp.atomic_add(s, 0, x[i])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warp_harness.model.index import child_nodes, dropped_nodes
from warp_harness.model.index_flow import IndexFlow, Origin
from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import (
    INT32,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Transform,
    Vector,
)
from warp_harness.model.uniformity import Reach, Uniformity, names_stored
from warp_harness.model.walk import walk
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import (
    OPERATOR_TEXT,
    compare_then_store,
    deferred_launch,
    iter_statements,
    uses_warp_builtin,
)

# Warp has no atomics for these element types: `+=` on them is a plain load-add-store
NON_ATOMIC_DTYPES = {"int8", "uint8", "int16", "uint16"}
# augmented assignments Warp lowers to an atomic on array elements
_ATOMIC_AUG = {
    ast.Add: "atomic_add",
    ast.Sub: "atomic_sub",
    ast.BitAnd: "atomic_and",
    ast.BitOr: "atomic_or",
    ast.BitXor: "atomic_xor",
}
_LOCKS = {"atomic_cas", "atomic_exch"}


def _exits(stmt: ast.stmt, in_loop: bool) -> bool:
    """Whether ``stmt`` may end the thread (return) or, inside a loop, the iteration."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Return:
            return True
        if in_loop and (kind is ast.Break or kind is ast.Continue):
            return True
        if (kind is ast.For or kind is ast.While) and node is not stmt:
            # break/continue inside a nested loop only leave that loop
            if _returns(node):
                return True
            continue
        stack.extend(_blocks(node))
    return False


def _returns(stmt: ast.AST) -> bool:
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if type(node) is ast.Return:
            return True
        stack.extend(_blocks(node))
    return False


# what may hold a statement: a statement's blocks, an ``except`` clause's, a ``case``'s
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def _blocks(node: ast.AST) -> list[ast.AST]:
    """The children of ``node`` that are or hold statements (``return``/``break``/``continue`` are
    statements: no expression holds one)."""
    return [child for child in child_nodes(node) if isinstance(child, _HOLDS_STATEMENTS)]


def _ends_with_exit(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Break | ast.Continue)


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _indices(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


@dataclass
class _Location:
    """An array element many threads may update: the array (its source text and type) and, for an index
    loaded from memory, where it comes from (`Origin.NONE`: the same element in every thread)."""

    array: str
    array_type: Array
    origin: Origin


@dataclass
class _Finding:
    """A non-atomic update found in a kernel."""

    stmt: ast.stmt
    message: str
    hint: str
    fix: Fix | None
    related: list[Related]
    actual: str
    severity: Severity


_ATOMIC_NAMES = {
    "+": "atomic_add",
    "-": "atomic_sub",
    "min": "atomic_min",
    "max": "atomic_max",
    "&": "atomic_and",
    "|": "atomic_or",
    "^": "atomic_xor",
}
_WHY = {
    Origin.GATHERED: "threads that load the same index (a repeated key) overwrite each other's updates",
    Origin.CONNECTIVITY: (
        "elements that share a node (a vertex of several edges, triangles or tetrahedra) overwrite "
        "each other's updates"
    ),
    Origin.BINNED: "threads whose values fall into the same bin overwrite each other's updates",
}


class NonAtomicUpdate(Rule):
    id = "WH010"
    name = "nonatomic-update"
    summary = "non-atomic read-modify-write of an array element that several threads update"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.LAUNCHES, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        types = ctx.types(kernel)
        if not types.tid_unpacks or not self._has_candidates(kernel, types):
            return
        if self._single_thread(ctx, kernel):
            return
        if uses_warp_builtin(ctx, kernel, _LOCKS):
            return  # a critical section protected by a lock: not something to judge statically
        uniformity = Uniformity(ctx.model, kernel, types)
        flow = IndexFlow(kernel, types, uniformity)
        certain = Severity.ERROR if ctx.profile.is_cuda else Severity.WARNING
        state = _State(ctx, kernel, types, uniformity, flow, certain)
        for finding in self._visit(state, kernel.node.body, Reach.MANY, False):
            yield self.report(
                ctx,
                finding.stmt,
                finding.message,
                kernel=kernel.name,
                expected="an atomic update (`+=`, `wp.atomic_add`, `wp.atomic_min`, ...)",
                actual=finding.actual,
                hint=finding.hint,
                fix=finding.fix,
                related=finding.related,
                severity=finding.severity,
            )

    def _has_candidates(self, kernel: KernelDef, types: KernelTypes) -> bool:
        """A cheap first look, by shape only: a store into an array (a parameter or a field of one) at an
        index that is not only thread indices, which reads the same element (directly or through a
        local), is an augmented assignment Warp may not make atomic, or is a compare-and-store."""
        params = {p.name for p in kernel.params}
        tids = set(types.tid_vars)

        def element(node: ast.expr) -> tuple[str, str] | None:
            if not isinstance(node, ast.Subscript) or _root_name(node.value) not in params:
                return None
            names: set[str] = set()
            loads = False
            for n in walk(node.slice):
                kind = type(n)
                if kind is ast.Name:
                    names.add(n.id)  # type: ignore[attr-defined]
                elif kind is ast.Subscript or kind is ast.Call:
                    loads = True
                    break
            if names and names <= tids and not loads:
                return None  # the thread's own element
            return ast.dump(node.value), ast.dump(node.slice)

        statements = list(iter_statements(kernel.node.body, dropped_nodes(kernel.node)))
        read_into: dict[str, tuple[str, str]] | None = None  # t = s[k]: t -> the element

        def reads() -> dict[str, tuple[str, str]]:
            """``read_into``, collected when a store first asks (most kernels store no shared element)."""
            nonlocal read_into
            if read_into is None:
                read_into = {}
                for node in statements:
                    if (
                        isinstance(node, ast.Assign)
                        and len(node.targets) == 1
                        and isinstance(node.targets[0], ast.Name)
                    ):
                        read = element(node.value)
                        if read is not None:
                            read_into[node.targets[0].id] = read
            return read_into

        for node in statements:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                stored = element(node.targets[0])
                if stored is None:
                    continue
                for n in walk(node.value):
                    if isinstance(n, ast.Subscript) and element(n) == stored:
                        return True
                    if isinstance(n, ast.Name) and reads().get(n.id) == stored:
                        return True
            elif isinstance(node, ast.AugAssign) and element(node.target) is not None:
                if type(node.op) not in _ATOMIC_AUG:
                    return True
                array = types.of(node.target.value) if isinstance(node.target, ast.Subscript) else None
                if not isinstance(array, Array) or _scalar_name(array) in NON_ATOMIC_DTYPES:
                    return True
            elif isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
                compared = {element(side) for side in (node.test.left, *node.test.comparators)}
                for store in node.body:
                    if isinstance(store, ast.Assign) and len(store.targets) == 1:
                        stored = element(store.targets[0])
                        if stored is not None and stored in compared:
                            return True
        return False

    def _single_thread(self, ctx: RuleContext, kernel: KernelDef) -> bool:
        """Every launch of the kernel in this file certainly starts a single thread."""
        sites = ctx.launches_of(kernel)
        if not sites:
            return False
        for site in sites:
            if deferred_launch(site):
                return False  # record_cmd: set_dim may give it any size later
            dim = site.fold(site.dim, ctx.constants.values, ctx.imports)
            dims = dim if isinstance(dim, tuple) else (dim,)
            if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
                return False
            total = 1
            for d in dims:
                assert isinstance(d, int)
                total *= d
            if site.tiled:
                block = site.fold(site.block_dim, ctx.constants.values, ctx.imports)
                if not isinstance(block, int) or isinstance(block, bool):
                    return False
                total *= max(block, 1)
            if total > 1:
                return False
        return True

    def _visit(self, st: _State, body: list[ast.stmt], reach: Reach, in_loop: bool) -> Iterator[_Finding]:
        u = st.u
        dropped = dropped_nodes(st.kernel.node)  # branches Warp never compiles (`if wp.static(False):`)
        for stmt in body:
            if id(stmt) in dropped:
                continue
            if reach > Reach.ONE:
                finding: _Finding | None = None
                if isinstance(stmt, ast.Assign):
                    finding = self._assign(st, stmt, reach)
                elif isinstance(stmt, ast.AugAssign):
                    finding = self._augassign(st, stmt, reach)
                elif isinstance(stmt, ast.If):
                    finding = self._check_then_store(st, stmt, reach)
                if finding is not None:
                    yield finding
            if isinstance(stmt, ast.If):
                yield from self._visit(st, stmt.body, min(reach, u.reach(stmt.test, True)), in_loop)
                yield from self._visit(st, stmt.orelse, min(reach, u.reach(stmt.test, False)), in_loop)
            elif isinstance(stmt, ast.While):
                yield from self._visit(st, stmt.body, min(reach, u.reach(stmt.test, True)), True)
                yield from self._visit(st, stmt.orelse, reach, in_loop)
            elif isinstance(stmt, ast.For):
                yield from self._visit(st, stmt.body, reach, True)
                yield from self._visit(st, stmt.orelse, reach, in_loop)
            if reach > Reach.ONE and _exits(stmt, in_loop):
                reach = min(reach, self._reach_after(u, stmt))

    def _reach_after(self, u: Uniformity, stmt: ast.stmt) -> Reach:
        """How many threads still run the statements after an early exit in ``stmt``."""
        if isinstance(stmt, ast.Return | ast.Break | ast.Continue):
            return Reach.ONE
        if isinstance(stmt, ast.If):
            body_exits = any(_exits(s, True) for s in stmt.body)
            else_exits = any(_exits(s, True) for s in stmt.orelse)
            if _ends_with_exit(stmt.body) and not else_exits:
                return u.reach(stmt.test, False)
            if _ends_with_exit(stmt.orelse) and not body_exits:
                return u.reach(stmt.test, True)
        # some other shape of conditional exit: fine only when every condition in it is thread-independent
        for node in ast.walk(stmt):
            if isinstance(node, ast.If | ast.While) and not u.uniform(node.test):
                return Reach.ONE
            if isinstance(node, ast.For) and not u.uniform(node.iter):
                return Reach.ONE
        return Reach.MANY

    # --- which element, and how sure ------------------------------------------------------------
    def _target(self, st: _State, target: ast.expr) -> _Location | None:
        """The element a full-index store into a kernel array writes, when several threads may share it:
        a thread-independent index, or one loaded from memory."""
        if not isinstance(target, ast.Subscript):
            return None
        root = _root_name(target.value)
        u = st.u
        if root is None or root not in u.params or root in u.locals:
            return None
        array = st.types.of(target.value)
        if not isinstance(array, Array):
            param = u.kernel.param(root) if isinstance(target.value, ast.Name) else None
            if param is None or not isinstance(param.type, Array):
                return None
            array = param.type
        indices = _indices(target)
        if any(isinstance(i, ast.Slice) for i in indices) or len(indices) != array.ndim:
            return None
        text = st.ctx.source_of(target.value)
        if u.uniform(target.slice):
            return _Location(text, array, Origin.NONE)
        if any(st.flow.own(i) for i in indices):
            return None  # one index is the thread's own (`out[bins[i], i]`): so is the element
        origin = st.flow.origin(target.slice)
        if origin is Origin.NONE:
            return None  # the thread's own element, or an index the checker cannot place
        return _Location(text, array, origin)

    def _severity(self, st: _State, loc: _Location, reach: Reach, counting: bool) -> Severity | None:
        """None when the update is not reported (see the module docstring)."""
        if reach is Reach.ONE:
            return None
        if loc.origin is Origin.NONE:
            return st.certain if reach is Reach.MANY else Severity.WARNING
        if loc.origin >= Origin.CONNECTIVITY or counting:
            return Severity.WARNING
        return None  # an index gathered from an array may be a permutation

    def _who(self, st: _State, loc: _Location, target: ast.Subscript, reach: Reach) -> str:
        """How threads come to share the element, for the message."""
        element = st.ctx.source_of(target)
        if loc.origin is Origin.NONE:
            if reach is Reach.MANY:
                return "every thread uses the same element"
            return f"every thread that gets here uses the same `{element}`"
        return f"the index is loaded from memory: {_WHY[loc.origin]}"

    def _related(self, st: _State, target: ast.Subscript, loc: _Location) -> list[Related]:
        """Where a data-dependent index was loaded (``b = values[i]``)."""
        if loc.origin is Origin.NONE:
            return []
        names = {n.id for n in ast.walk(target.slice) if isinstance(n, ast.Name)} & st.u.locals
        for node in walk_body(st.kernel.node):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in names
                and st.flow.origin(node.value) is not Origin.NONE
            ):
                name = node.targets[0].id
                return [Related(st.ctx.location(node, st.kernel.name), f"`{name}` is loaded here")]
        return []

    # --- s[k] = s[k] op e ------------------------------------------------------------------
    def _assign(self, st: _State, stmt: ast.Assign, reach: Reach) -> _Finding | None:
        if len(stmt.targets) != 1:
            return None
        target = stmt.targets[0]
        loc = self._target(st, target)
        if loc is None:
            return None
        assert isinstance(target, ast.Subscript)
        ctx, u = st.ctx, st.u
        value = stmt.value
        reads = [
            n
            for n in ast.walk(value)
            if isinstance(n, ast.Subscript) and _same(n.value, target.value) and _same(n.slice, target.slice)
        ]
        via_local: ast.Assign | None = None
        read: ast.expr
        if reads:
            read = reads[0]
        else:
            via_local = self._read_through_local(st, value, target, stmt)
            if via_local is None:
                return None
            local = names_stored(via_local.targets[0])[0]
            read = next(n for n in ast.walk(value) if isinstance(n, ast.Name) and n.id == local)
        operation, operand = self._decompose(value, read)
        if not self._races(u, value, read, operation, operand):
            return None
        counting = operation in ("+", "-") and operand is not None and u.uniform(operand)
        severity = self._severity(st, loc, reach, counting)
        if severity is None:
            return None
        array = loc.array_type
        element = ctx.source_of(target)
        fix = None if via_local is not None else self._fix(st, stmt, target, array, operation, operand)
        atomic = _ATOMIC_NAMES.get(operation or "")
        related = self._related(st, target, loc)
        if via_local is not None:
            related.insert(0, Related(ctx.location(via_local, st.kernel.name), f"`{element}` is read here"))
            what = f"`{element}` is read into `{ctx.source_of(read)}` and written back"
        else:
            what = f"`{ctx.source_of(stmt)}` reads and writes `{element}`"
        if atomic is not None and self._atomic_dtype(array, operation or ""):
            short = {
                "atomic_add": f"`{element} += ...`",
                "atomic_sub": f"`{element} -= ...`",
                "atomic_and": f"`{element} &= ...`",
                "atomic_or": f"`{element} |= ...`",
                "atomic_xor": f"`{element} ^= ...`",
            }.get(atomic)
            where = ", ".join(ctx.source_of(i) for i in _indices(target))
            operand_text = "..." if operand is None else _text(ctx, operand)
            hint = f"update it atomically: `wp.{atomic}({loc.array}, {where}, {operand_text})`" + (
                f" or {short}" if short else ""
            )
        elif atomic is not None:
            hint = (
                f"Warp has no atomics for {array.dtype} arrays: accumulate into an int32/float32 array "
                f"with `wp.{atomic}`, or reduce per block first"
            )
        else:
            hint = (
                "there is no atomic form of this update: compute per-thread results into an array indexed "
                "by the thread and reduce them afterwards (or guard it so one thread runs it)"
            )
        return _Finding(
            stmt,
            f"{what}, and {self._who(st, loc, target, reach)}: a data race on the GPU"
            + (" (threads overwrite each other's updates)" if loc.origin is Origin.NONE else ""),
            hint,
            fix,
            related,
            ctx.source_of(stmt),
            severity,
        )

    def _read_through_local(
        self, st: _State, value: ast.expr, target: ast.Subscript, stmt: ast.Assign
    ) -> ast.Assign | None:
        """``t = s[k]`` earlier, ``s[k] = f(t)`` now: the assignment of ``t``."""
        u = st.u
        used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        index_names = {n.id for n in ast.walk(target.slice) if isinstance(n, ast.Name)}
        if any(u.assign_counts.get(n, 0) > 1 for n in index_names):
            return None  # the index may change between the read and the write
        for node in walk_body(st.kernel.node):
            if (
                not isinstance(node, ast.Assign)
                or len(node.targets) != 1
                or not isinstance(node.targets[0], ast.Name)
            ):
                continue
            local = node.targets[0].id
            if local not in used or u.assign_counts.get(local) != 1 or node.lineno >= stmt.lineno:
                continue
            read = node.value
            if (
                isinstance(read, ast.Subscript)
                and _same(read.value, target.value)
                and _same(read.slice, target.slice)
            ):
                return node
        return None

    def _races(
        self, u: Uniformity, value: ast.expr, read: ast.expr, operation: str | None, operand: ast.expr | None
    ) -> bool:
        """Whether concurrent threads running the update give a different result than running it in turn."""
        if operation in ("&", "|", "min", "max"):
            # idempotent with a thread-independent operand: every thread stores the same value
            return operand is not None and not u.uniform(operand)
        if operation is not None:
            return True  # +, -, *, /, ^: every thread's update must see the previous one
        # another shape: a race when each thread contributes something of its own; a
        # thread-independent function of the old value may be idempotent (wp.abs(s[0])): stay quiet
        u.assume = {id(read)}
        try:
            return not u.uniform(value)
        finally:
            u.assume = set()

    def _decompose(self, value: ast.expr, read: ast.expr) -> tuple[str | None, ast.expr | None]:
        """(operation, operand) for ``read op operand`` shapes that have an atomic equivalent."""
        if isinstance(value, ast.BinOp):
            op = type(value.op)
            text = OPERATOR_TEXT.get(op)
            if value.left is read and text in ("+", "-", "&", "|", "^", "*", "/"):
                return text, value.right
            if value.right is read and text in ("+", "&", "|", "^", "*"):
                return text, value.left
            # s[k] + a + b: the read is the first term of a chain of additions
            chain: list[ast.expr] = []
            node: ast.expr = value
            while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                chain.append(node.right)
                node = node.left
            if node is read and len(chain) > 1:
                terms = list(reversed(chain))
                rest: ast.expr = terms[0]
                for term in terms[1:]:
                    rest = ast.BinOp(rest, ast.Add(), term)
                return "+", rest
            return None, None
        if isinstance(value, ast.Call) and len(value.args) == 2 and not value.keywords:
            func = value.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else None
            )
            if name in ("min", "max"):
                if value.args[0] is read:
                    return name, value.args[1]
                if value.args[1] is read:
                    return name, value.args[0]
        return None, None

    def _atomic_dtype(self, array: Array, operation: str) -> bool:
        dtype = array.dtype
        scalar = (
            dtype
            if isinstance(dtype, Scalar)
            else dtype.dtype
            if isinstance(dtype, Vector | Matrix | Quaternion | Transform)
            else None
        )
        if scalar is None or scalar.name in NON_ATOMIC_DTYPES or scalar.name == "bool":
            return False
        if operation in ("&", "|", "^"):
            return isinstance(dtype, Scalar) and scalar.is_int
        if operation in ("min", "max"):
            return isinstance(dtype, Scalar) and scalar.name != "float16"
        return True

    def _atomic_call(
        self, st: _State, target: ast.Subscript, operation: str, operand_text: str
    ) -> str | None:
        """``wp.atomic_min(array, i, j, value)`` text, when every index is an int32 (Warp's overloads)."""
        alias = next((local for local, module in st.ctx.imports.modules.items() if module == "warp"), None)
        indices = _indices(target)
        if alias is None or not all(st.types.of(i) == INT32 for i in indices):
            return None
        args = ", ".join(
            [st.ctx.source_of(target.value), *(st.ctx.source_of(i) for i in indices), operand_text]
        )
        return f"{alias}.{_ATOMIC_NAMES[operation]}({args})"

    def _fix(
        self,
        st: _State,
        stmt: ast.Assign,
        target: ast.Subscript,
        array: Array,
        operation: str | None,
        operand: ast.expr | None,
    ) -> Fix | None:
        if operation is None or operand is None or not self._atomic_dtype(array, operation):
            return None
        ctx = st.ctx
        operand_text = _text(ctx, operand)
        element = ctx.source_of(target)
        if operation in ("+", "-", "&", "|", "^"):
            new = f"{element} {operation}= {operand_text}"
            return Fix(f"Make it atomic: `{element} {operation}= ...`", (ctx.replace(stmt, new),))
        if operation in ("min", "max"):
            call = self._atomic_call(st, target, operation, operand_text)
            if call is None:
                return None
            return Fix(f"Make it atomic: `{call.split('(')[0]}(...)`", (ctx.replace(stmt, call),))
        return None

    # --- if v < s[k]: s[k] = v ----------------------------------------------------------------
    def _check_then_store(self, st: _State, stmt: ast.If, reach: Reach) -> _Finding | None:
        """A compare-and-store of a shared element: ``if d < best[0]: best[0] = d`` (a minimum, racy:
        two threads pass the test against the same old value and the later store wins)."""
        found = compare_then_store(stmt)
        if found is None:
            return None
        return self._compare_store(st, stmt, found.store, found.target, found.value, found.operation, reach)

    def _compare_store(
        self,
        st: _State,
        stmt: ast.If,
        store: ast.Assign,
        target: ast.Subscript,
        value: ast.expr,
        operation: str,
        reach: Reach,
    ) -> _Finding | None:
        u, ctx = st.u, st.ctx
        if u.uniform(value):
            return None  # every thread stores the same value
        loc = self._target(st, target)
        if loc is None:
            return None
        severity = self._severity(st, loc, reach, counting=False)
        if severity is None:
            return None
        element = ctx.source_of(target)
        value_text = ctx.source_of(value)
        atomic = f"wp.{_ATOMIC_NAMES[operation]}"
        fix: Fix | None = None
        call = None
        if self._atomic_dtype(loc.array_type, operation):
            call = self._atomic_call(st, target, operation, value_text)
        if call is not None and stmt.body == [store] and not stmt.orelse:
            fix = Fix(f"Make it atomic: `{call.split('(')[0]}(...)`", (ctx.replace(stmt, call),))
        if stmt.body == [store]:
            hint = f"update it atomically: `{call or atomic + '(...)'}`"
        else:
            hint = (
                f"the other stores under the test (an arg-{operation}) race too: `{atomic}` the value, "
                f"then in a second pass let the thread whose value equals the result store the rest "
                f"(or pack value and index into one integer and `{atomic}` that)"
            )
        test_text = ctx.source_of(stmt.test)
        return _Finding(
            stmt,
            f"`if {test_text}: {element} = {value_text}` reads `{element}`, compares and writes it, and "
            f"{self._who(st, loc, target, reach)}: a data race on the GPU (two threads pass the test "
            f"against the same old value and the later store wins, losing the {operation}imum)",
            hint,
            fix,
            self._related(st, target, loc),
            f"if {test_text}: {ctx.source_of(store)}",
            severity,
        )

    # --- s[k] op= e where Warp emits no atomic -------------------------------------------------
    def _augassign(self, st: _State, stmt: ast.AugAssign, reach: Reach) -> _Finding | None:
        loc = self._target(st, stmt.target)
        if loc is None:
            return None
        assert isinstance(stmt.target, ast.Subscript)
        ctx = st.ctx
        array = loc.array_type
        op = type(stmt.op)
        text = OPERATOR_TEXT.get(op, "?")
        element = ctx.source_of(stmt.target)
        who = self._who(st, loc, stmt.target, reach)
        if op in _ATOMIC_AUG:
            dtype = array.dtype
            scalar = (
                dtype
                if isinstance(dtype, Scalar)
                else dtype.dtype
                if isinstance(dtype, Vector | Matrix | Quaternion | Transform)
                else None
            )
            if scalar is None or scalar.name not in NON_ATOMIC_DTYPES:
                return None  # Warp emits an atomic (or the element type is unknown)
            severity = self._severity(st, loc, reach, counting=st.u.uniform(stmt.value))
            if severity is None:
                return None
            return _Finding(
                stmt,
                f"`{element} {text}= ...` is not atomic for {dtype} arrays (Warp has no atomics for 8- and "
                f"16-bit integers), and {who}: a data race on the GPU",
                f"store the counts in an int32 array (`dtype=wp.int32`) so that `{text}=` becomes an atomic",
                None,
                self._related(st, stmt.target, loc),
                ctx.source_of(stmt),
                severity,
            )
        if op is ast.Pow or op is ast.MatMult:
            return None
        severity = self._severity(st, loc, reach, counting=False)
        if severity is None:
            return None
        return _Finding(
            stmt,
            f"`{element} {text}= ...` is not atomic in Warp (only `+=`, `-=`, `&=`, `|=`, `^=` are), and "
            f"{who}: a data race on the GPU",
            "there is no atomic form of this update: compute per-thread results into an array indexed by the "
            "thread and combine them afterwards (or guard it so one thread runs it)",
            None,
            self._related(st, stmt.target, loc),
            ctx.source_of(stmt),
            severity,
        )


@dataclass
class _State:
    """What the checks of one kernel share."""

    ctx: RuleContext
    kernel: KernelDef
    types: KernelTypes
    u: Uniformity
    flow: IndexFlow
    certain: Severity  # the severity of a race every thread certainly runs


def _root_name(node: ast.expr) -> str | None:
    """``state`` for ``state.particle_f`` / ``state``; None for anything else."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _scalar_name(array: Array) -> str | None:
    """The scalar type of an array's elements (of a vector's components), when known."""
    dtype = array.dtype
    if isinstance(dtype, Vector | Matrix | Quaternion | Transform):
        dtype = dtype.dtype
    return dtype.name if isinstance(dtype, Scalar) else None


def _text(ctx: RuleContext, node: ast.expr) -> str:
    return ctx.source_of(node) if hasattr(node, "lineno") else ast.unparse(node)
