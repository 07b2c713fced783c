"""## WH005 kernel-return-value

A `@wp.kernel` returns a value (`return x`). A kernel's results must be written to its output
arrays; only `@wp.func` functions return values. A bare `return` (an early exit) is fine.

Also reported: `return None`, in a kernel or a `@wp.func` (Warp has no `None` value); a kernel
declared to return a type (`-> float`), even when it returns nothing; and a bare `return` in a
`@wp.func` declared to return a value (`-> float`).

### Why it matters
Warp refuses the module with `WarpCodegenTypeError: Warp kernels cannot return values`; a value
computed this way never reaches the host. `return None` fails the same way (`None type unsupported`).
A function declared `-> float` that returns nothing on one path fails either in Warp's code generator
(`'NoneType' object is not iterable`, when a `return value` comes first) or in the C++ compiler
(`non-void function should return a value`, or `assigning to 'float' from incompatible type 'void'`
at the call).

### Bad
```python
@wp.kernel
def norm(x: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    return wp.length(x[i])
```

### Good
```python
@wp.kernel
def norm(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = wp.length(x[i])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.index import body_index, full_body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import UnknownType
from warp_harness.record import Fix, Record, Severity, TextEdit
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import kernel_model


class KernelReturnValue(Rule):
    id = "WH005"
    name = "kernel-return-value"
    summary = "a kernel returns a value, a function returns None or returns nothing despite its annotation"
    severity = Severity.ERROR
    priority = 80
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func"):
            return
        declared = _declared_value(kernel)
        if kernel.is_kernel:
            record = self._kernel_annotation(ctx, kernel)
            if record is not None:
                yield record
        # Warp looks for a kernel's `return value` in its whole syntax tree, before it drops the branches of
        # a static `if` (`ModuleBuilder._kernel_has_value_return`); a function's returns only where compiled
        body = full_body_index(kernel.node) if kernel.is_kernel else body_index(kernel.node)
        for node in body.of(ast.Return):
            if _is_none(node.value):
                yield self._return_none(ctx, kernel, node, declared)
            elif node.value is None:
                if declared is not None:
                    yield self._missing_value(ctx, kernel, node, declared)
            elif kernel.is_kernel:
                yield self._kernel_value(ctx, kernel, node, node.value)

    def _kernel_annotation(self, ctx: RuleContext, kernel: KernelDef) -> Record | None:
        """A kernel declared to return a Warp type (``-> float``): Warp rejects it, even with no value
        returned (``-> None`` and no annotation are fine)."""
        annotation = kernel.return_annotation
        if annotation is None or _is_none(annotation):
            return None
        if any(isinstance(n, ast.Return) and n.value is not None for n in full_body_index(kernel.node).nodes):
            return None  # the `return value` is reported: one error for one mistake
        if isinstance(kernel_model(ctx, kernel).resolver.resolve(annotation), UnknownType):
            return None  # an alias of None (`Ret = None`), `types.NoneType`, ...: not known to be a type
        text = ctx.source_of(annotation)
        fix = None
        loc = ctx.location(annotation)
        line = ctx.source.lines[loc.line - 1] if 0 < loc.line <= len(ctx.source.lines) else ""
        arrow = line.rfind("->", 0, loc.col)
        if arrow >= 0 and loc.end_line == loc.line and not line[arrow + 2 : loc.col].strip():
            start = len(line[:arrow].rstrip())
            fix = Fix(
                f"Remove the return annotation `-> {text}`",
                (TextEdit(loc.line, start, loc.line, loc.end_col or loc.col, ""),),
                safe=True,
            )
        return self.report(
            ctx,
            annotation,
            f"kernel `{kernel.name}` is declared to return `{text}`; kernels cannot return values",
            kernel=kernel.name,
            expected="no return annotation, or `-> None`",
            actual=f"-> {text}",
            hint="write results to output array parameters and drop the return annotation",
            fix=fix,
        )

    def _kernel_value(
        self, ctx: RuleContext, kernel: KernelDef, node: ast.Return, value_node: ast.expr
    ) -> Record:
        value = ctx.source_of(value_node)
        return self.report(
            ctx,
            node,
            f"kernel `{kernel.name}` returns a value (`{value}`); kernels cannot return values",
            kernel=kernel.name,
            expected="a bare `return` or none",
            actual=f"return {value}",
            hint="write the value to an output array parameter, e.g. `out[i] = ...`, "
            "or make this a `@wp.func` called from a kernel",
            fix=Fix(
                "Replace with a bare `return` (the value is discarded)",
                (ctx.replace(node, "return"),),
                safe=False,
            ),
        )

    def _return_none(
        self, ctx: RuleContext, kernel: KernelDef, node: ast.Return, declared: str | None
    ) -> Record:
        what = "kernel" if kernel.is_kernel else "func"
        if declared is not None:
            return self.report(
                ctx,
                node,
                f"func `{kernel.name}` is declared to return `{declared}` but returns `None`; "
                "Warp has no `None` value (None type unsupported)",
                kernel=kernel.name,
                expected=f"return a `{declared}` value",
                actual="return None",
                hint=f"return a `{declared}` on this path too",
            )
        return self.report(
            ctx,
            node,
            f"{what} `{kernel.name}` returns `None`; Warp has no `None` value (None type unsupported)",
            kernel=kernel.name,
            expected="a bare `return`",
            actual="return None",
            hint="write a bare `return`",
            fix=Fix("Replace with a bare `return`", (ctx.replace(node, "return"),), safe=True),
        )

    def _missing_value(self, ctx: RuleContext, kernel: KernelDef, node: ast.Return, declared: str) -> Record:
        return self.report(
            ctx,
            node,
            f"func `{kernel.name}` is declared to return `{declared}` but this `return` has no value; "
            "Warp rejects the function",
            kernel=kernel.name,
            expected=f"return a `{declared}` value",
            actual="return",
            hint=f"return a `{declared}` on this path too (a default such as `{declared}(0)`), "
            "or drop the return annotation if the function returns nothing",
        )


def _is_none(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _declared_value(kernel: KernelDef) -> str | None:
    """The return annotation's text of a `@wp.func` declared to return a value (not `-> None`)."""
    annotation = kernel.return_annotation
    if kernel.is_kernel or annotation is None or _is_none(annotation):
        return None
    return ast.unparse(annotation)
