"""## WH020 launch-dim-float

A `wp.launch` / `wp.launch_tiled` whose `dim` (or one entry of a `dim` tuple) is certainly a float:
a true division (`len(x) / 2`, `n / block`), arithmetic with a float (`x.shape[0] * 0.5`,
`n // 2.0`), a float literal or a constant holding one (`N = 1e6`), `float(...)`, or a `math`
function that returns floats (`math.sqrt(n)`). Names are followed through the launching function's
single assignments (`half = n / 2` ... `dim=half`) and module constants. `int(...)`, `len(...)`,
`math.ceil(...)`, `round(x)` and anything of unknown type are left alone.

### Why it matters
Python's `/` always gives a float, even when the division is exact (`8 / 2` is `4.0`), and Warp
only takes integers as launch dimensions: every launch raises
`TypeError: 'float' object cannot be interpreted as an integer` (from `operator.index` in
`_normalize_launch_dim`), on every device, `record_cmd=True` included.

The fix turns `/` into `//` (it rounds down: write `(n + b - 1) // b` where the last partial block
must run), and a float literal with an integral value into an integer literal.

### Bad
```python
@wp.kernel
def halve(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 0.5 * a[i]

wp.launch(halve, dim=len(a) / 2, inputs=[a])
```

### Good
```python
@wp.kernel
def halve(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 0.5 * a[i]

wp.launch(halve, dim=len(a) // 2, inputs=[a])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warp_harness.model.index import NodeIndex, around_body, full_body_index
from warp_harness.model.launches import LaunchSite
from warp_harness.record import Fix, Record, Related, Severity, TextEdit
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope, byte_to_char_col

# `math` functions whose result is a float whatever their arguments
_MATH_FLOATS = {
    "sqrt",
    "cbrt",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "pow",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "hypot",
    "fabs",
    "fmod",
    "fsum",
    "degrees",
    "radians",
    "copysign",
    "ldexp",
}
_MAX_DEPTH = 6


@dataclass(eq=False, repr=False)
class _Float:
    """Why an expression is a float: ``cause`` is the node that makes it one (a `/`, a float literal,
    a call); ``via`` the assignment it was reached through, if any."""

    cause: ast.expr
    reason: str
    via: ast.expr | None = None


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LaunchDimFloat(Rule):
    id = "WH020"
    name = "launch-dim-float"
    summary = "a launch `dim` that is a float (`len(x) / 2`): Warp raises at launch"
    severity = Severity.ERROR
    priority = 60
    fixable = True

    scope = Scope.LAUNCH
    reads = frozenset({Fact.IMPORTS, Fact.SCOPES, Fact.CONSTANTS})

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterator[Record]:
        dim = site.dim
        if dim is None:
            return
        parts = list(dim.elts) if isinstance(dim, ast.Tuple | ast.List) else [dim]
        for part in parts:
            if isinstance(part, ast.Starred):
                continue
            found = self._float(ctx, site, part, 0)
            if found is None:
                continue
            related: list[Related] = []
            if found.via is not None:
                related.append(Related(ctx.location(found.via), "the float value is assigned here"))
            what = "an entry of the launch `dim`" if part is not dim else "the launch `dim`"
            yield self.report(
                ctx,
                part,
                f"{what} `{_short(ctx.source_of(part))}` is a float ({found.reason}): Warp raises "
                "`TypeError: 'float' object cannot be interpreted as an integer` at launch",
                expected="an integer",
                actual="float",
                hint="launch dimensions must be integers: use `//` for division, or `int(...)`",
                fix=self._fix(ctx, part, found),
                related=related,
            )

    # what makes a value a float -----------------------------------------------------------------
    def _float(
        self, ctx: RuleContext, site: LaunchSite, node: ast.expr, depth: int, local: bool = True
    ) -> _Float | None:
        """Why ``node`` is certainly a float; ``local``: whether it is read in the launching function
        (else at module level, in a constant's definition)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, float):
                return _Float(node, f"`{ctx.source_of(node)}` is a float literal")
            return None
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div):
                return _Float(node, "`/` always gives a float in Python, even when it divides exactly")
            if isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod | ast.Pow):
                for side in (node.left, node.right):
                    inner = self._float(ctx, site, side, depth + 1, local)
                    if inner is not None:
                        reason = (
                            inner.reason
                            if inner.reason.startswith("arithmetic")
                            else (f"arithmetic with a float: {inner.reason}")
                        )
                        return _Float(inner.cause, reason, inner.via)
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            return self._float(ctx, site, node.operand, depth + 1, local)
        if isinstance(node, ast.IfExp):
            body = self._float(ctx, site, node.body, depth + 1, local)
            orelse = self._float(ctx, site, node.orelse, depth + 1, local)
            return body if body is not None and orelse is not None else None
        if isinstance(node, ast.Call):
            if ctx.imports.warp_name(node.func) == "constant" and len(node.args) == 1:
                return self._float(ctx, site, node.args[0], depth + 1, local)
            return self._call(ctx, node)
        if isinstance(node, ast.Name):
            return self._name(ctx, site, node, depth, local)
        return None

    def _name(
        self, ctx: RuleContext, site: LaunchSite, node: ast.Name, depth: int, local: bool
    ) -> _Float | None:
        if local:
            alias = site.local_aliases.get(node.id)
            if alias is not None:
                inner = self._float(ctx, site, alias, depth + 1, local)
                return None if inner is None else _Float(inner.cause, inner.reason, inner.via or alias)
            if node.id in self._bound(ctx, site):
                return None  # a parameter or a local assigned more than once
        definition = ctx.constants.definitions.get(node.id)
        if definition is None or definition.value is None or node.id in self._declared_global(ctx):
            return None  # not a module constant, or one some function may rebind
        inner = self._float(ctx, site, definition.value, depth + 1, local=False)
        return None if inner is None else _Float(inner.cause, inner.reason, inner.via or definition.value)

    def _declared_global(self, ctx: RuleContext) -> frozenset[str]:
        """Names some function of the file declares ``global`` (and so may rebind)."""
        return ctx.once(
            (self.id, "global"),
            lambda: frozenset(
                name for node in ctx.module_nodes(Fact.SCOPES).of(ast.Global) for name in node.names
            ),
        )

    def _bound(self, ctx: RuleContext, site: LaunchSite) -> frozenset[str]:
        """Names the launching function, or a function around it, binds (parameters and assignments of
        any kind): there a module constant's name is not the constant. Empty at module level."""
        if not isinstance(site.scope, ast.FunctionDef | ast.AsyncFunctionDef):
            return frozenset()
        line = site.node.lineno
        names: set[str] = set()
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
            *ctx.module_nodes(Fact.SCOPES).of(ast.FunctionDef),
            *ctx.module_nodes(Fact.SCOPES).of(ast.AsyncFunctionDef),
        ]
        for fn in functions:
            if fn.lineno <= line <= (fn.end_lineno or fn.lineno):
                names |= self._bound_in(ctx, fn)
        return frozenset(names)

    def _bound_in(self, ctx: RuleContext, scope: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
        def compute() -> frozenset[str]:
            args = scope.args
            names = {
                a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a
            }
            # the body's nodes by kind from the model's shared index; the rest of the function is small
            before, after = around_body(scope)
            for index in (full_body_index(scope), NodeIndex([*before, *after])):
                names.update(n.id for n in index.of(ast.Name) if not isinstance(n.ctx, ast.Load))
                declarations: list[ast.Global | ast.Nonlocal] = [
                    *index.of(ast.Global),
                    *index.of(ast.Nonlocal),
                ]
                for declaration in declarations:
                    names.update(declaration.names)
            return frozenset(names)

        return ctx.once((self.id, "bound", id(scope)), compute)

    def _call(self, ctx: RuleContext, call: ast.Call) -> _Float | None:
        func = call.func
        if isinstance(func, ast.Name) and func.id == "float" and func.id not in ctx.imports.objects:
            return _Float(call, "`float(...)` is a float")
        math_name = ctx.imports.math_name(func)
        if math_name in _MATH_FLOATS:
            return _Float(call, f"`math.{math_name}` returns a float")
        return None

    # fixes -------------------------------------------------------------------------------------
    def _fix(self, ctx: RuleContext, part: ast.expr, found: _Float) -> Fix | None:
        cause = found.cause
        if isinstance(cause, ast.Constant) and isinstance(cause.value, float):
            if not cause.value.is_integer() or abs(cause.value) >= 2**53:
                return None
            if cause is part:
                return Fix(f"write `{int(cause.value)}`", (ctx.replace(cause, str(int(cause.value))),))
            if isinstance(part, ast.Name):
                # the constant may be used as a float elsewhere: convert at the launch only
                return Fix(f"write `int({part.id})`", (ctx.replace(part, f"int({part.id})"),))
            return None
        if isinstance(cause, ast.BinOp) and isinstance(cause.op, ast.Div):
            edit = self._operator_edit(ctx, cause)
            if edit is not None:
                # `//` rounds down: whether the last partial block should run is the author's call
                return Fix("use integer division `//`", (edit,), safe=False)
        return None

    def _operator_edit(self, ctx: RuleContext, node: ast.BinOp) -> TextEdit | None:
        """Replace the `/` between the operands with `//` (only when it sits on one line)."""
        left_end_line = node.left.end_lineno
        left_end = node.left.end_col_offset
        if left_end_line is None or left_end is None or left_end_line != node.right.lineno:
            return None
        line = ctx.source.lines[left_end_line - 1] if 0 < left_end_line <= len(ctx.source.lines) else ""
        raw = line.encode("utf-8")
        gap = raw[left_end : node.right.col_offset]
        if gap.count(b"/") != 1 or b"#" in gap:
            return None
        byte_col = left_end + gap.index(b"/")
        col = byte_to_char_col(line, byte_col)
        return TextEdit(left_end_line, col, left_end_line, col + 1, "//")
