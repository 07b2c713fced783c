"""## WH019 func-call

A call of one of the file's own `@wp.func` helpers whose arguments do not match the helper's
annotations: the wrong number of arguments, an unknown keyword, or an argument whose type is
certainly not the parameter's: a `float32` for an `int` parameter, an `int32` (the literal `2`
included) for a `float` one, a `vec3` where a `float` is expected, a `vec3d` for a `wp.vec3`, an
array of another dtype.

Warp converts nothing when it matches a call to a `@wp.func`: not even the literal `1` to a
`float` parameter or an `int32` to a `wp.int64` one. Only calls whose target is certain are checked
(a name defined once in the file, not rebound); overloaded helpers (several `@wp.func` of one name)
and generic parameters (`typing.Any`, `wp.array(dtype=Any)`, type variables) are left alone, as are
arguments whose type is not known.

The fix writes a literal of the parameter's type (`2.0` for `2`) where that is all it takes.

### Why it matters
Warp reports the mismatch only when it builds the module, after importing it and building
everything before it: `Couldn't find function overload for 'f' that matched inputs with types:
[float32, float32]`, with no word about which argument is wrong.

### Bad
```python
@wp.func
def spring_force(stretch: float, k: float, index: int):
    return -k * stretch * float(index)

@wp.kernel
def forces(x: wp.array(dtype=float), f: wp.array(dtype=float)):
    i = wp.tid()
    f[i] = spring_force(x[i], 2, i)
```

### Good
```python
@wp.func
def spring_force(stretch: float, k: float, index: int):
    return -k * stretch * float(index)

@wp.kernel
def forces(x: wp.array(dtype=float), f: wp.array(dtype=float)):
    i = wp.tid()
    f[i] = spring_force(x[i], 2.0, i)
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warp_harness.model.func_calls import bind_arguments, called_func, warp_key
from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef, Param
from warp_harness.model.refined_types import ModuleTypeFacts, RefinedTypes
from warp_harness.model.types import (
    FLOAT32,
    INT32,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Struct,
    Transform,
    Vector,
    WarpType,
    is_concrete,
    warp_type_name,
)
from warp_harness.record import Fix, Location, Record, Related, Severity, TextEdit
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_VALUES = (Scalar, Vector, Matrix, Quaternion, Transform)


@dataclass(frozen=True)
class _Mismatch:
    """An argument whose type the called function's parameter does not accept."""

    param: Param
    argument: ast.expr
    actual: WarpType


def _accepts(param: WarpType, arg: WarpType) -> bool | None:
    """Whether Warp's overload matching takes an argument of type ``arg`` for ``param`` (None: unsure)."""
    if not (is_concrete(param) and is_concrete(arg)):
        return None
    if isinstance(param, _VALUES):
        if isinstance(arg, _VALUES):
            return param == arg
        return False if isinstance(arg, Array | Struct) else None
    if isinstance(param, Array):
        if isinstance(arg, Array):
            # Warp ignores the rank here and relates array kinds by subclassing: only plain arrays compared
            if param.kind == arg.kind == "array":
                return param.dtype == arg.dtype
            return None
        return False if isinstance(arg, _VALUES) else None
    if isinstance(param, Struct):
        if isinstance(arg, Struct):
            return True if arg == param else None  # another name may be an alias of the same struct
        return False if isinstance(arg, (*_VALUES, Array)) else None
    return None


def _literal(node: ast.expr) -> int | float | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal(node.operand)
        if inner is not None:
            return -inner if isinstance(node.op, ast.USub) else inner
    return None


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _signature(func: KernelDef, ctx: RuleContext) -> str:
    parts = []
    for param in func.params:
        annotation = ctx.source_of(param.annotation) if param.annotation is not None else "?"
        parts.append(f"{param.name}: {annotation}")
    return f"{func.name}({', '.join(parts)})"


class FuncCall(Rule):
    id = "WH019"
    name = "func-call"
    summary = "a call of the file's @wp.func whose arguments don't match its annotations"
    severity = Severity.ERROR
    priority = 72
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS, Fact.SCOPES})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body or not ctx.funcs:
            return
        types: RefinedTypes | None = None
        funcs = ctx.funcs
        for call in body_index(kernel.node).of(ast.Call):
            if not isinstance(call.func, ast.Name) or call.func.id not in funcs:
                continue
            func = called_func(ctx.model, kernel, call)
            if func is None or func.node is kernel.node:
                continue
            binding = bind_arguments(func, call)
            if binding is None:
                continue
            if types is None:
                facts = ctx.once((self.id, "facts"), lambda: ModuleTypeFacts(ctx.model))
                types = RefinedTypes(kernel, ctx.types(kernel), facts, ctx.builtins)
            if binding.error is not None:
                yield self._arity(ctx, kernel, func, call, binding.error, types, self._related(ctx, func))
                continue
            mismatches = []
            for name, argument in binding.arguments.items():
                param = func.param(name)
                if param is None:
                    continue
                actual = types.of(argument)
                if _accepts(param.type, actual) is False:
                    mismatches.append(_Mismatch(param, argument, actual))
            if mismatches:
                yield self._types(ctx, kernel, func, call, mismatches, types, self._related(ctx, func))

    def _related(self, ctx: RuleContext, func: KernelDef) -> list[Related]:
        return [Related(self._definition(ctx, func), f"`{func.name}` is defined here")]

    def _definition(self, ctx: RuleContext, func: KernelDef) -> Location:
        node = func.node
        line = ctx.source.lines[node.lineno - 1] if 0 < node.lineno <= len(ctx.source.lines) else ""
        col = max(line.find("def "), 0)
        return Location(
            ctx.path, node.lineno, col, node.lineno, col + len("def ") + len(node.name), func.name
        )

    def _warp_says(self, ctx: RuleContext, func: KernelDef, call: ast.Call, types: RefinedTypes) -> str:
        """Warp's own message, when every argument's type is known."""
        shown = [types.of(a) for a in [*call.args, *(kw.value for kw in call.keywords)]]
        if not all(is_concrete(t) for t in shown):
            return ""
        names = ", ".join(warp_type_name(t) for t in shown)
        key = warp_key(ctx.model, func)
        return (
            f"; Warp: \"Couldn't find function overload for '{key}' that matched inputs with types: "
            f'[{names}]"'
        )

    def _arity(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        func: KernelDef,
        call: ast.Call,
        error: str,
        types: RefinedTypes,
        related: list[Related],
    ) -> Record:
        signature = _signature(func, ctx)
        return self.report(
            ctx,
            call,
            f"`{ctx.source_of(call)}` does not fit `{signature}`: {error}"
            + self._warp_says(ctx, func, call, types),
            kernel=kernel.name,
            expected=signature,
            actual=ctx.source_of(call),
            hint=f"call `{func.name}` with the parameters it declares: `{signature}`",
            related=related,
        )

    def _types(
        self,
        ctx: RuleContext,
        kernel: KernelDef,
        func: KernelDef,
        call: ast.Call,
        mismatches: list[_Mismatch],
        types: RefinedTypes,
        related: list[Related],
    ) -> Record:
        signature = _signature(func, ctx)
        details = "; ".join(
            f"`{m.param.name}` takes {_a(warp_type_name(m.param.type))}, "
            f"`{ctx.source_of(m.argument)}` is {_a(warp_type_name(m.actual))}"
            for m in mismatches
        )
        edits = [self._edit(ctx, m) for m in mismatches]
        fix: Fix | None = None
        if all(e is not None for e in edits):
            done = [e for e in edits if e is not None]
            fix = Fix(
                "Write " + ", ".join(f"`{text}`" for _, text in done),
                tuple(edit for edit, _ in done),
                safe=True,
            )
        conversions = [
            f"`{self._conversion(ctx, m)}`" for m in mismatches if self._conversion(ctx, m) is not None
        ]
        hint = (
            "convert explicitly: " + ", ".join(conversions)
            if conversions
            else f"pass arguments of the declared types: `{signature}`"
        )
        return self.report(
            ctx,
            call,
            f"`{ctx.source_of(call)}` does not match `{signature}`: {details} (Warp converts no "
            f"argument of a @wp.func)" + self._warp_says(ctx, func, call, types),
            kernel=kernel.name,
            expected=[warp_type_name(m.param.type) for m in mismatches],
            actual=[warp_type_name(m.actual) for m in mismatches],
            hint=hint,
            fix=fix,
            related=related,
        )

    def _edit(self, ctx: RuleContext, mismatch: _Mismatch) -> tuple[TextEdit, str] | None:
        """A literal of the parameter's type in place of a literal of another (``2`` -> ``2.0``)."""
        value = _literal(mismatch.argument)
        target = mismatch.param.type
        if value is None or not isinstance(mismatch.actual, Scalar):
            return None
        if target == FLOAT32:
            text = repr(float(value))
        elif target == INT32 and float(value).is_integer():
            text = str(int(value))
        else:
            return None
        return ctx.replace(mismatch.argument, text), text

    def _conversion(self, ctx: RuleContext, mismatch: _Mismatch) -> str | None:
        target = mismatch.param.type
        if not isinstance(target, Scalar) or not isinstance(mismatch.actual, Scalar) or target.name == "bool":
            return None
        source = ctx.source_of(mismatch.argument)
        if target == FLOAT32:
            return f"float({source})"
        if target == INT32:
            return f"int({source})"
        return f"wp.{target.name}({source})"
