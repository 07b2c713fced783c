"""## WH045 maybe-unassigned

A local variable of a kernel or function is read where some path reaches it without an assignment:
set inside an `if` and read after it (`if slots[1] >= 0: x_I = ...` then `x_I` unconditionally),
set in one side of an `if` and read in the other, set later in a loop body than it is read, or set
only in a branch Warp drops (`if False:`, `if wp.static(FLAG):` with `FLAG` false).

Warp compiles a body once, in source order (`warp_harness/model/definite_assignment.py` follows it):

- when no statement before the read binds the name on the path Warp compiles, Warp refuses the
  function: `Referencing undefined symbol: a` (an error here);
- when some path binds it and another does not, Warp compiles a read of an uninitialised C++ local
  on the other path: undefined behaviour, which the CPU's JIT has been seen to exploit (a warning).
  Reported in the plain shape only, `if c: x = v` (no `else`, no `elif`) followed by a read of `x`
  that no condition of its own guards: real simulation code leans on `elif` chains that cover every
  case and on reads guarded by the same flag as the assignment, and those are left alone.

Loops are taken to run at least once, an `if` on module constants only (`if not FLAG:`) is taken
as decided at import time, and names the module also defines (Warp falls back to them) are left
alone. The fix assigns a zero of the variable's type before the statement that holds the
first assignment; it is offered, not applied by `check --fix`, since zero may not be the value meant.

### Why it matters
Python raises `UnboundLocalError` for such a read; Warp does not: the kernel runs with whatever the
register held (measured with Warp 1.19 on the CPU: the reduction in tests/corpus/real_bugs reads 0 on
one run and garbage such as -3958.3 on the next). In mujoco_warp's actuator model a DC motor without
an integral state read `x_I` uninitialised, and the CPU build computed a spurious friction term from
it (google-deepmind/mujoco_warp#1528).

### Bad
```python
@wp.kernel
def actuator_force(slots: wp.array(dtype=int), act: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    if slots[i] >= 0:
        x_I = act[slots[i]]
    out[i] = 2.0 * x_I
```

### Good
```python
@wp.kernel
def actuator_force(slots: wp.array(dtype=int), act: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    x_I = 0.0
    if slots[i] >= 0:
        x_I = act[slots[i]]
    out[i] = 2.0 * x_I
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from collections.abc import Set as AbstractSet

from warp_harness.model.definite_assignment import UnboundRead, unbound_reads
from warp_harness.model.index import body_index, full_body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import BOOL, FLOAT32, INT32, Scalar, Vector, WarpType, warp_type_name
from warp_harness.model.walk import walk
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope


def _module_names(body: list[ast.stmt]) -> frozenset[str]:
    names: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        else:
            for sub in walk(stmt):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
    return frozenset(names)


def _comprehension_reads(node: ast.FunctionDef) -> set[int]:
    """The ids of the names read inside a comprehension that binds them (its own loop variables)."""
    found: set[int] = set()
    for comp in full_body_index(node).of_any(ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp):
        assert isinstance(comp, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp)
        targets = {t.id for g in comp.generators for t in ast.walk(g.target) if isinstance(t, ast.Name)}
        found.update(id(n) for n in ast.walk(comp) if isinstance(n, ast.Name) and n.id in targets)
    return found


def _stored(node: ast.FunctionDef) -> set[str]:
    return {n.id for n in body_index(node).of(ast.Name) if isinstance(n.ctx, ast.Store)}


def _reads_only(test: ast.expr, names: AbstractSet[str]) -> bool:
    """Whether ``test`` reads no name but module-level ones (and at least one)."""
    read = [n.id for n in walk(test) if isinstance(n, ast.Name)]
    return bool(read) and all(name in names for name in read)


def _zero(t: WarpType, warp: str) -> str | None:
    if t == FLOAT32:
        return "0.0"
    if t == INT32:
        return "0"
    if t == BOOL:
        return "False"
    if isinstance(t, Scalar):
        return f"{warp}.{t.name}(0)"
    if isinstance(t, Vector) and t.length in (2, 3, 4):
        return f"{warp}.{warp_type_name(t)}()"
    return None


class MaybeUnassigned(Rule):
    id = "WH045"
    name = "maybe-unassigned"
    summary = (
        "a local read where some path reaches it unassigned (undefined symbol, or an uninitialised read)"
    )
    severity = Severity.WARNING
    priority = 70
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.SCOPES, Fact.STRUCTS, Fact.FUNCS, Fact.KERNELS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or kernel.abstract:
            return
        outer = ctx.once(("WH045", "module names"), lambda: _module_names(ctx.module_body(Fact.SCOPES)))
        static: dict[int, bool | None] = {
            id(b.node): b.taken for b in kernel.static_branches if isinstance(b.node, ast.If)
        }
        bound = {p.name for p in kernel.params} | _stored(kernel.node)
        for branch in body_index(kernel.node).of(ast.If):
            if id(branch) not in static and _reads_only(branch.test, outer - bound):
                static[id(branch)] = None  # decided by module constants (`if not FLAG:`): not a runtime path
        names = full_body_index(kernel.node).of(ast.Name)
        # a comprehension binds its own targets (WH002 already reports the comprehension itself)
        in_comprehension = _comprehension_reads(kernel.node)
        names = [n for n in names if id(n) not in in_comprehension]
        for read in unbound_reads(kernel.node, (p.name for p in kernel.params), static, outer, names):
            if read.never_bound or read.one_sided:
                yield self._record(ctx, kernel, read)

    def _record(self, ctx: RuleContext, kernel: KernelDef, read: UnboundRead) -> Record:
        name = read.name
        related = [
            Related(ctx.location(b, kernel.name), f"`{name}` is assigned here") for b, _ in read.bindings
        ]
        if read.never_bound:
            return self.report(
                ctx,
                read.node,
                f"`{name}` is read before any assignment Warp compiles on this path; Warp refuses "
                f'{kernel.kind} `{kernel.name}`: "Referencing undefined symbol: {name}"',
                kernel=kernel.name,
                expected=f"`{name}` assigned before this read",
                actual="no assignment on the path to the read",
                hint=f"assign `{name}` before this read, outside the branch or loop that sets it",
                fix=self._fix(ctx, kernel, read),
                related=related,
                severity=Severity.ERROR,
            )
        return self.report(
            ctx,
            read.node,
            f"`{name}` is assigned only on some paths before this read; on the others Warp reads an "
            f"uninitialised variable (undefined behaviour; Python would raise UnboundLocalError)",
            kernel=kernel.name,
            expected=f"`{name}` assigned on every path to the read",
            actual="assigned on some paths only",
            hint=f"give `{name}` a value before the branch or loop that assigns it",
            fix=self._fix(ctx, kernel, read),
            related=related,
        )

    def _fix(self, ctx: RuleContext, kernel: KernelDef, read: UnboundRead) -> Fix | None:
        if not read.bindings:
            return None
        first = read.bindings[0][0]
        holder = next(
            (s for s in kernel.node.body if any(n is first for n in ast.walk(s))),
            None,
        )
        if holder is None or holder is first or holder.lineno > read.node.lineno:
            return None  # assigned by a top-level statement after the read: no hoisting helps
        warp = next((local for local, module in ctx.imports.modules.items() if module == "warp"), "wp")
        zero = _zero(ctx.types(kernel).variables.get(read.name, FLOAT32), warp)
        if zero is None:
            return None
        return Fix(
            f"Assign `{read.name} = {zero}` before the branch",
            (ctx.insert_line_before(holder, f"{read.name} = {zero}"),),
            safe=False,
        )
