"""## WH010 nonatomic-update

A kernel reads an array element, computes with it and stores the result back into the same
element, `s[k] = s[k] + x[i]`, where the index `k` is the same for every thread (it does not
depend on `wp.tid()`) and the statement is reached by many threads. Threads interleave between
the read and the write and overwrite each other's updates: a data race.

Also reported: an augmented assignment Warp does not lower to an atomic, `s[k] *= 2.0` (only
`+=`, `-=`, `&=`, `|=`, `^=` are atomic), and any augmented assignment on an `int8`, `uint8`,
`int16` or `uint16` array (Warp has no atomics for those types), and the two-statement form
`t = s[k]` ... `s[k] = t + x[i]`.

Not reported: `s[k] += x[i]` (Warp compiles it to `wp.atomic_add`), `y[i] = y[i] + x[i]` with
`i` from `wp.tid()` (each thread updates its own element), updates guarded so that a single
thread reaches them (`if i == 0:`), kernels that never call `wp.tid()` or whose every launch in
the file has one thread, kernels that take a lock (`wp.atomic_cas` / `wp.atomic_exch`), and
idempotent updates with a thread-independent operand (`s[0] = wp.max(s[0], 1.0)`). An index
or condition the checker cannot prove thread-independent is never reported.

Severity: error on CUDA targets; a warning on `cpu`, where Warp runs a launch's threads one
after another and the result happens to be right.

### Why it matters
The race is silent. On the CPU the threads run in sequence and the result looks right; on a GPU
thousands of threads read the same old value: measured on an H200, 2^20 threads adding 1.0 this
way gave 7.0 instead of 1,048,576.

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
from warp_harness.model.uniformity import Uniformity, names_stored
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import OPERATOR_TEXT, deferred_launch, iter_statements, uses_warp_builtin

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
        if isinstance(node, ast.Return):
            return True
        if in_loop and isinstance(node, ast.Break | ast.Continue):
            return True
        if isinstance(node, ast.For | ast.While) and node is not stmt:
            # break/continue inside a nested loop only leave that loop
            for child in ast.walk(node):
                if isinstance(child, ast.Return):
                    return True
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _ends_with_exit(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], ast.Return | ast.Break | ast.Continue)


def _same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def _indices(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


@dataclass
class _Finding:
    stmt: ast.stmt
    array: str
    message: str
    hint: str
    fix: Fix | None
    related: list[Related]
    actual: str


class NonAtomicUpdate(Rule):
    id = "WH010"
    name = "nonatomic-update"
    summary = "non-atomic read-modify-write of an array element that many threads update"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.KERNEL
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.LAUNCHES})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.is_kernel or not kernel.has_python_body:
            return
        types = ctx.model.types(kernel)
        if not types.tid_unpacks or not self._has_candidates(kernel, types):
            return
        if self._single_thread(ctx, kernel):
            return
        if uses_warp_builtin(ctx, kernel, _LOCKS):
            return  # a critical section protected by a lock: not something to judge statically
        uniformity = Uniformity(ctx.model, kernel, types)
        severity = Severity.ERROR if ctx.profile.is_cuda else Severity.WARNING
        for finding in self._visit(ctx, kernel, types, uniformity, kernel.node.body, True, False):
            yield self.report(
                ctx,
                finding.stmt,
                finding.message,
                kernel=kernel.name,
                expected="an atomic update (`+=`, `wp.atomic_add`, ...)",
                actual=finding.actual,
                hint=finding.hint,
                fix=finding.fix,
                related=finding.related,
                severity=severity,
            )

    def _has_candidates(self, kernel: KernelDef, types: KernelTypes) -> bool:
        """A cheap first look: a store into an array parameter whose index does not name a thread index."""
        arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
        tids = set(types.tid_vars)
        for node in iter_statements(kernel.node.body):
            target: ast.expr | None = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            elif isinstance(node, ast.AugAssign):
                target = node.target
            if (
                isinstance(target, ast.Subscript)
                and isinstance(target.value, ast.Name)
                and target.value.id in arrays
                and not any(isinstance(n, ast.Name) and n.id in tids for n in ast.walk(target.slice))
            ):
                return True
        return False

    def _single_thread(self, ctx: RuleContext, kernel: KernelDef) -> bool:
        """Every launch of the kernel in this file certainly starts a single thread."""
        sites = ctx.model.launches_of(kernel)
        if not sites:
            return False
        for site in sites:
            if deferred_launch(site):
                return False  # record_cmd: set_dim may give it any size later
            dim = site.fold(site.dim, ctx.model.constants.values, ctx.model.imports)
            dims = dim if isinstance(dim, tuple) else (dim,)
            if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
                return False
            total = 1
            for d in dims:
                assert isinstance(d, int)
                total *= d
            if site.tiled:
                block = site.fold(site.block_dim, ctx.model.constants.values, ctx.model.imports)
                if not isinstance(block, int) or isinstance(block, bool):
                    return False
                total *= max(block, 1)
            if total > 1:
                return False
        return True

    def _visit(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        types: KernelTypes,
        u: Uniformity,
        body: list[ast.stmt],
        many: bool,
        in_loop: bool,
    ) -> Iterator[_Finding]:
        for stmt in body:
            if many:
                if isinstance(stmt, ast.Assign):
                    finding = self._assign(ctx, kernel, types, u, stmt)
                    if finding is not None:
                        yield finding
                elif isinstance(stmt, ast.AugAssign):
                    finding = self._augassign(ctx, types, u, stmt)
                    if finding is not None:
                        yield finding
            if isinstance(stmt, ast.If):
                yield from self._visit(
                    ctx, kernel, types, u, stmt.body, many and u.reaches_many(stmt.test, True), in_loop
                )
                yield from self._visit(
                    ctx, kernel, types, u, stmt.orelse, many and u.reaches_many(stmt.test, False), in_loop
                )
            elif isinstance(stmt, ast.While):
                yield from self._visit(
                    ctx, kernel, types, u, stmt.body, many and u.reaches_many(stmt.test, True), True
                )
                yield from self._visit(ctx, kernel, types, u, stmt.orelse, many, in_loop)
            elif isinstance(stmt, ast.For):
                yield from self._visit(ctx, kernel, types, u, stmt.body, many, True)
                yield from self._visit(ctx, kernel, types, u, stmt.orelse, many, in_loop)
            if many and _exits(stmt, in_loop):
                many = self._still_many_after(u, stmt)

    def _still_many_after(self, u: Uniformity, stmt: ast.stmt) -> bool:
        """Whether many threads still run the statements after an early exit in ``stmt``."""
        if isinstance(stmt, ast.Return | ast.Break | ast.Continue):
            return False
        if isinstance(stmt, ast.If):
            body_exits = any(_exits(s, True) for s in stmt.body)
            else_exits = any(_exits(s, True) for s in stmt.orelse)
            if _ends_with_exit(stmt.body) and not else_exits:
                return u.reaches_many(stmt.test, False)
            if _ends_with_exit(stmt.orelse) and not body_exits:
                return u.reaches_many(stmt.test, True)
        # some other shape of conditional exit: fine only when every condition in it is thread-independent
        for node in ast.walk(stmt):
            if isinstance(node, ast.If | ast.While) and not u.uniform(node.test):
                return False
            if isinstance(node, ast.For) and not u.uniform(node.iter):
                return False
        return True

    # --- s[k] = s[k] op e ------------------------------------------------------------------
    def _target(self, types: KernelTypes, u: Uniformity, target: ast.expr) -> tuple[str, Array] | None:
        """(array name, type) for a full-index store into a kernel array parameter at a uniform index."""
        if not isinstance(target, ast.Subscript) or not isinstance(target.value, ast.Name):
            return None
        name = target.value.id
        if name not in u.params or name in u.locals:
            return None
        array = types.of(target.value)
        if not isinstance(array, Array):
            param = u.kernel.param(name)
            if param is None or not isinstance(param.type, Array):
                return None
            array = param.type
        indices = _indices(target)
        if any(isinstance(i, ast.Slice) for i in indices) or len(indices) != array.ndim:
            return None
        if not u.uniform(target.slice):
            return None
        return name, array

    def _assign(
        self, ctx: RuleContext, kernel: KernelDef, types: KernelTypes, u: Uniformity, stmt: ast.Assign
    ) -> _Finding | None:
        if len(stmt.targets) != 1:
            return None
        target = stmt.targets[0]
        found = self._target(types, u, target)
        if found is None:
            return None
        assert isinstance(target, ast.Subscript)
        name, array = found
        value = stmt.value
        reads = [
            n
            for n in ast.walk(value)
            if isinstance(n, ast.Subscript)
            and isinstance(n.value, ast.Name)
            and n.value.id == name
            and _same(n.slice, target.slice)
        ]
        via_local: ast.Assign | None = None
        read: ast.expr
        if reads:
            read = reads[0]
        else:
            via_local = self._read_through_local(kernel, u, value, target, stmt)
            if via_local is None:
                return None
            local = names_stored(via_local.targets[0])[0]
            read = next(n for n in ast.walk(value) if isinstance(n, ast.Name) and n.id == local)
        operation, operand = self._decompose(value, read)
        if not self._races(u, value, read, operation, operand):
            return None
        element = ctx.source_of(target)
        fix = (
            None if via_local is not None else self._fix(ctx, types, stmt, target, array, operation, operand)
        )
        atomic = {
            "+": "atomic_add",
            "-": "atomic_sub",
            "min": "atomic_min",
            "max": "atomic_max",
            "&": "atomic_and",
            "|": "atomic_or",
            "^": "atomic_xor",
        }.get(operation or "")
        related: list[Related] = []
        if via_local is not None:
            related.append(Related(ctx.location(via_local, kernel.name), f"`{element}` is read here"))
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
            hint = f"update it atomically: `wp.{atomic}({name}, {where}, ...)`" + (
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
            name,
            f"{what}, and every thread uses the same element: a data race on the GPU "
            f"(threads overwrite each other's updates)",
            hint,
            fix,
            related,
            actual=ctx.source_of(stmt),
        )

    def _read_through_local(
        self, kernel: KernelDef, u: Uniformity, value: ast.expr, target: ast.Subscript, stmt: ast.Assign
    ) -> ast.Assign | None:
        """``t = s[k]`` earlier, ``s[k] = f(t)`` now: the assignment of ``t``."""
        used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for node in walk_body(kernel.node):
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
            if isinstance(read, ast.Subscript) and _same(
                read, ast.Subscript(target.value, target.slice, ast.Load())
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

    def _fix(
        self,
        ctx: RuleContext,
        types: KernelTypes,
        stmt: ast.Assign,
        target: ast.Subscript,
        array: Array,
        operation: str | None,
        operand: ast.expr | None,
    ) -> Fix | None:
        if operation is None or operand is None or not self._atomic_dtype(array, operation):
            return None
        operand_text = ctx.source_of(operand) if hasattr(operand, "lineno") else ast.unparse(operand)
        element = ctx.source_of(target)
        if operation in ("+", "-", "&", "|", "^"):
            new = f"{element} {operation}= {operand_text}"
            return Fix(f"Make it atomic: `{element} {operation}= ...`", (ctx.replace(stmt, new),))
        if operation in ("min", "max"):
            alias = next(
                (local for local, module in ctx.model.imports.modules.items() if module == "warp"), None
            )
            indices = _indices(target)
            if alias is None or not all(types.of(i) == INT32 for i in indices):
                return None
            array_name = ctx.source_of(target.value)
            args = ", ".join([array_name, *(ctx.source_of(i) for i in indices), operand_text])
            new = f"{alias}.atomic_{operation}({args})"
            return Fix(f"Make it atomic: `{alias}.atomic_{operation}(...)`", (ctx.replace(stmt, new),))
        return None

    # --- s[k] op= e where Warp emits no atomic -------------------------------------------------
    def _augassign(
        self, ctx: RuleContext, types: KernelTypes, u: Uniformity, stmt: ast.AugAssign
    ) -> _Finding | None:
        found = self._target(types, u, stmt.target)
        if found is None:
            return None
        name, array = found
        op = type(stmt.op)
        text = OPERATOR_TEXT.get(op, "?")
        element = ctx.source_of(stmt.target)
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
            return _Finding(
                stmt,
                name,
                f"`{element} {text}= ...` is not atomic for {dtype} arrays (Warp has no atomics for 8- and "
                f"16-bit integers) and every thread updates the same element: a data race on the GPU",
                f"store the counts in an int32 array (`dtype=wp.int32`) so that `{text}=` becomes an atomic",
                None,
                [],
                actual=ctx.source_of(stmt),
            )
        if op is ast.Pow or op is ast.MatMult:
            return None
        return _Finding(
            stmt,
            name,
            f"`{element} {text}= ...` is not atomic in Warp (only `+=`, `-=`, `&=`, `|=`, `^=` are) and "
            f"every thread updates the same element: a data race on the GPU",
            "there is no atomic form of this update: compute per-thread results into an array indexed by the "
            "thread and combine them afterwards (or guard it so one thread runs it)",
            None,
            [],
            actual=ctx.source_of(stmt),
        )
