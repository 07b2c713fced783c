"""## WH025 int-division

Two integers are divided with `/` and the quotient is converted to a float: `float(i / (n - 1))`,
`wp.float32(j / ny)`, or `t = i / n` followed by `float(t)`. In Python `/` is true division; in a Warp
kernel, `/` on two integers is C's integer division, truncated toward zero, and the conversion comes
too late to keep the fraction.

A division whose operands the kernel also takes the remainder of (`row = tid / W` beside
`col = tid % W`, as in warp's own tests and tile MLP example) splits an index into a row and a column,
truncating on purpose, and is not reported; nor is a quotient kept in a local that is also used as an
integer (an index, integer arithmetic).

### Why it matters
The result is silently wrong: a sample coordinate `x = float(i / (n - 1))` is `0.0` for every thread
but the last, which gets `1.0` (measured with Warp 1.19 on the CPU: `[0, 0, 0, 0, 1]` instead of
`[0, 0.25, 0.5, 0.75, 1]`), so a grid of sample points collapses onto one corner. Warp compiles it
without a warning. Code that truncates on purpose says so with `//`, which Warp also supports (it rounds
toward negative infinity), so it is a warning, not an error.

The fix converts before dividing: `float(i) / float(n - 1)`.

### Bad
```python
@wp.kernel
def sample_line(out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = float(i / (n - 1))
```

### Good
```python
@wp.kernel
def sample_line(out: wp.array(dtype=float), n: int):
    i = wp.tid()
    out[i] = float(i) / float(n - 1)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index
from warp_harness.model.inference import KernelTypes
from warp_harness.model.int_arith import int_division
from warp_harness.model.kernel import KernelDef
from warp_harness.record import Fix, Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, walk_body
from warp_harness.rules.queries import kernel_model

_FLOATS = {"float16", "float32", "float64"}


def _operands(node: ast.BinOp) -> tuple[str, str]:
    return ast.unparse(node.left), ast.unparse(node.right)


class IntDivision(Rule):
    id = "WH025"
    name = "int-division"
    summary = "integer `/` converted to a float: Warp truncates the quotient first"
    severity = Severity.WARNING
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.FUNCS, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if not kernel.has_python_body:
            return
        types: KernelTypes | None = None
        divisions: dict[str, ast.BinOp | None] | None = None
        split: set[tuple[str, str]] | None = None
        for node in body_index(kernel.node).of(ast.Call):  # (`_float_call` is None for any other node)
            spelled = self._float_call(ctx, kernel, node)
            if spelled is None:
                continue
            assert isinstance(node, ast.Call)
            if types is None:
                types = kernel_model(ctx, kernel).types(kernel)
            argument = node.args[0]
            division: ast.BinOp | None = None
            via: ast.Name | None = None
            if int_division(types, argument):
                assert isinstance(argument, ast.BinOp)
                division = argument
            elif isinstance(argument, ast.Name):
                if divisions is None:
                    divisions = self._division_locals(kernel, types)
                division, via = divisions.get(argument.id), argument
                if division is not None and not self._only_converted(ctx, kernel, argument.id):
                    continue  # the quotient is also used as an integer: truncation is meant
            if division is None:
                continue
            if split is None:
                split = self._remainders(kernel)
            if _operands(division) in split:
                continue  # `tid / W` beside `tid % W`: a row and a column, truncated on purpose
            yield self._record(ctx, kernel, node, division, spelled, via)

    def _only_converted(self, ctx: RuleContext, kernel: KernelDef, name: str) -> bool:
        """Every read of the local ``name`` is the argument of a conversion to a float."""
        index = body_index(kernel.node)
        reads = sum(1 for n in index.of(ast.Name) if n.id == name and isinstance(n.ctx, ast.Load))
        converted = 0
        for node in index.of(ast.Call):
            if self._float_call(ctx, kernel, node) is not None:
                argument = node.args[0]
                converted += isinstance(argument, ast.Name) and argument.id == name
        return reads == converted

    def _remainders(self, kernel: KernelDef) -> set[tuple[str, str]]:
        """The operands of every `a % b` of the kernel, as text."""
        return {
            _operands(node) for node in body_index(kernel.node).of(ast.BinOp) if isinstance(node.op, ast.Mod)
        }

    def _float_call(self, ctx: RuleContext, kernel: KernelDef, node: ast.AST) -> str | None:
        """How ``node`` spells a conversion to a float (``float``, ``wp.float32``, ...), if it is one."""
        if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id == "float" and kernel.param("float") is None:
            return "float"
        warp = ctx.imports.warp_name(func)
        return ctx.source_of(func) if warp in _FLOATS else None

    def _division_locals(self, kernel: KernelDef, types: KernelTypes) -> dict[str, ast.BinOp | None]:
        """Locals bound exactly once, to an integer division (None for every other local)."""
        found: dict[str, ast.BinOp | None] = {}
        for node in walk_body(kernel.node):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(node, ast.Assign):
                targets, value = list(node.targets), node.value
            elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.For | ast.NamedExpr):
                targets = [node.target]
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                targets = [node.optional_vars]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                        single = (
                            isinstance(target, ast.Name)
                            and value is not None
                            and name.id not in found
                            and int_division(types, value)
                        )
                        found[name.id] = value if single and isinstance(value, ast.BinOp) else None
        for param in kernel.params:
            found[param.name] = None
        return found

    def _record(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        call: ast.Call,
        division: ast.BinOp,
        spelled: str,
        via: ast.Name | None,
    ) -> Record:
        left, right = ctx.source_of(division.left), ctx.source_of(division.right)
        quotient = ctx.source_of(division)
        converted = f"{spelled}({left}) / {spelled}({right})"
        fix = None
        if via is None:
            fix = Fix(f"Divide as floats: `{converted}`", (ctx.replace(call, converted),), safe=False)
        shown = f"`{via.id}` (`{quotient}`)" if via is not None else f"`{quotient}`"
        return self.report(
            ctx,
            call,
            f"{shown} divides two integers: in a Warp kernel `/` on integers truncates (C's integer "
            f"division), so `{ctx.source_of(call)}` converts the truncated quotient and the fraction is lost",
            kernel=kernel.name,
            expected=converted,
            actual=f"{spelled}(trunc({left} / {right}))",
            hint=f"convert before dividing: `{converted}` (or write `//` where truncation is meant)",
            fix=fix,
            related=[Related(ctx.location(division, kernel.name), "the integer division")]
            if via is not None
            else (),
        )
