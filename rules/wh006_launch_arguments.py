"""## WH006 launch-arguments

A `wp.launch` / `wp.launch_tiled` call passes a number of arguments (`inputs` + `outputs`
together) that differs from the kernel's parameter count, or passes an argument whose kind
certainly cannot match its parameter:

- a number, string, list or tuple literal where the kernel expects an array;
- a host array (`wp.zeros(...)`, `wp.array(...)`, ... or a name bound to one), a list, a tuple,
  a string or `None` where it expects a (non-bool) scalar;
- a float literal where it expects an integer scalar;
- a single number where it expects a vector, matrix, quaternion or transform (Warp wants
  `wp.vec3(...)`), a number or `None` where it expects a struct;
- a name the launching function says is one of those: a literal it assigns once (`n = 2.5`,
  an error like the literal itself), or one of its parameters, never rebound, annotated
  `n: float` or defaulting to `2.5` (passed for an integer scalar), annotated as an array
  (for a scalar) or as a number (for an array or a vector). Those are warnings: Python does not
  enforce annotations, and a `float` annotation admits ints, which Warp accepts.

Only kernels defined in the same file and literal `inputs` / `outputs` lists are checked; a
launch whose `dim` is certainly empty (`dim=0`) is skipped, since Warp returns before checking.

### Why it matters
Warp checks arguments only when the launch runs, after the module has been built (seconds for a
cold compile): `Error launching kernel 'k', passed 1 arguments but kernel requires 2.`, or
`argument 'x' expects an array of type array(ndim=1, dtype=float32), but passed value has type
float.` Arguments are matched to parameters by position: `inputs` first, then `outputs`.

### Bad
```python
@wp.kernel
def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]

wp.launch(axpy, dim=n, inputs=[x, y])          # 2 arguments, 3 parameters
wp.launch(axpy, dim=n, inputs=[x, 2.0, y])     # an array for `a`, a float for `x`
```

### Good
```python
wp.launch(axpy, dim=n, inputs=[2.0, x], outputs=[y])
```
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from warp_harness.model.index import NodeIndex, full_body_index
from warp_harness.model.kernel import KernelDef, Param
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel
from warp_harness.model.types import Array, Matrix, Quaternion, Scalar, Struct, Transform, Vector
from warp_harness.record import Record, Related, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import (
    definition_location,
    empty_launch,
    kernel_model,
    launch_arguments,
    launch_kernel,
)

# host calls that certainly return a Warp array
_ARRAY_FACTORIES = {
    "zeros",
    "empty",
    "ones",
    "full",
    "zeros_like",
    "empty_like",
    "ones_like",
    "full_like",
    "array",
    "clone",
    "from_numpy",
    "from_torch",
    "from_jax",
    "from_paddle",
    "from_dlpack",
}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _literal_number(node: ast.expr) -> int | float | bool | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _literal_number(node.operand)
        return inner if inner is not None and not isinstance(inner, bool) else None
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, complex)
    ):
        return node.value
    return None


class LaunchArguments(Rule):
    id = "WH006"
    name = "launch-arguments"
    summary = "launch arguments that don't match the kernel's parameters (count or kind)"
    severity = Severity.ERROR
    priority = 70

    scope = Scope.LAUNCH
    reads = frozenset({Fact.IMPORTS, Fact.KERNELS, Fact.SCOPES, Fact.CONSTANTS, Fact.STRUCTS})

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterator[Record]:
        kernel = launch_kernel(ctx, site)
        if kernel is None:
            return
        args = launch_arguments(site)
        if args is None:
            return
        if empty_launch(ctx, site):
            return  # Warp returns before checking the arguments of an empty launch
        related = [Related(definition_location(ctx, kernel), f"kernel `{kernel.name}` is defined here")]
        if len(args) != len(kernel.params):
            yield self._count(ctx, site, kernel, args, related)
            return
        for arg, param in zip(args, kernel.params, strict=True):
            problem = self._kind_problem(ctx, site, arg, param, kernel_model(ctx, kernel))
            severity: Severity | None = None
            if problem is None:
                declared = self._declared_problem(ctx, site, arg, param)
                if declared is not None:
                    problem, severity = declared[:2], declared[2]
            if problem is not None:
                yield self.report(
                    ctx,
                    arg,
                    f"argument `{_short(ctx.source_of(arg))}` for parameter `{param.name}` of "
                    f"`{kernel.name}` is {problem[1]}, but the parameter is {problem[0]}",
                    kernel=kernel.name,
                    expected=problem[0],
                    actual=problem[1],
                    hint=f"pass {problem[0]} for `{param.name}` (arguments match parameters by position: "
                    f"inputs first, then outputs)",
                    related=related,
                    severity=severity,
                )

    def _count(
        self,
        ctx: RuleContext,
        site: LaunchSite,
        kernel: KernelDef,
        args: list[ast.expr],
        related: list[Related],
    ) -> Record:
        n_in = len(site.argument_list("inputs") or [])
        n_out = len(args) - n_in
        wanted = len(kernel.params)
        names = ", ".join(f"`{p.name}`" for p in kernel.params)
        if len(args) < wanted:
            missing = kernel.params[len(args) :]
            hint = (
                "missing "
                + ", ".join(f"`{p.name}`" for p in missing)
                + " (arguments match parameters by position: inputs first, then outputs)"
            )
        else:
            extra = _plural(len(args) - wanted, "argument")
            hint = f"remove {extra}; the kernel takes {names or 'no parameters'}"
        anchor: ast.AST = site.inputs if site.inputs is not None else site.node
        end: ast.AST | None = None
        if (
            site.inputs is not None
            and site.outputs is not None
            and (site.outputs.lineno, site.outputs.col_offset) > (site.inputs.lineno, site.inputs.col_offset)
        ):
            end = site.outputs
        return self.report(
            ctx,
            anchor,
            f"launch of `{kernel.name}` passes {_plural(len(args), 'argument')} "
            f"({n_in} in inputs, {n_out} in outputs) but the kernel has {_plural(wanted, 'parameter')}"
            + (f" ({names})" if names else ""),
            kernel=kernel.name,
            expected=wanted,
            actual=len(args),
            hint=hint,
            related=related,
            end_node=end,
        )

    def _kind_problem(
        self, ctx: RuleContext, site: LaunchSite, arg: ast.expr, param: Param, defining: ModuleModel
    ) -> tuple[str, str] | None:
        """(what the parameter is, what the argument certainly is) for a certain mismatch."""
        t = param.type
        number = _literal_number(arg)
        is_string = isinstance(arg, ast.Constant) and isinstance(arg.value, str | bytes)
        is_none = isinstance(arg, ast.Constant) and arg.value is None
        is_display = isinstance(arg, ast.List | ast.Tuple)
        if isinstance(t, Array):
            if number is not None:
                return f"an array ({t})", f"a {type(number).__name__} literal"
            if is_string:
                return f"an array ({t})", "a string"
            if is_display:
                return f"an array ({t})", f"a Python {'list' if isinstance(arg, ast.List) else 'tuple'}"
            return None
        if isinstance(t, Scalar) and t.name != "bool":  # a bool parameter takes any value's truth
            if self._host_array(ctx, site, arg):
                return f"a scalar ({t})", "a Warp array"
            if is_display:
                return f"a scalar ({t})", f"a Python {'list' if isinstance(arg, ast.List) else 'tuple'}"
            if is_string:
                return f"a scalar ({t})", "a string"
            if is_none:
                return f"a scalar ({t})", "None"
            if t.is_int and isinstance(number, float):
                return f"an integer scalar ({t})", "a float literal"
            return None
        if isinstance(t, Vector | Matrix | Quaternion | Transform):
            if number is not None and not isinstance(number, bool):
                return f"a {type(t).__name__.lower()} ({t})", f"a single {type(number).__name__}"
            return None
        if isinstance(t, Struct) and t.name in defining.structs:
            if is_none:
                return f"a struct ({t})", "None"
            if number is not None:
                return f"a struct ({t})", f"a {type(number).__name__} literal"
        return None

    def _declared_problem(
        self, ctx: RuleContext, site: LaunchSite, arg: ast.expr, param: Param
    ) -> tuple[str, str, Severity] | None:
        """A mismatch shown by what the launching function says of a name: a literal it assigns once (an
        error, as the literal itself), or the annotation or default of its parameter (a warning: Python
        does not enforce annotations, and a ``float`` one admits ints)."""
        if not isinstance(arg, ast.Name):
            return None
        declared = _declared(ctx, site, arg.id)
        if declared is None:
            return None
        host, origin, severity = declared
        t = param.type
        problem: str | None = None
        if isinstance(t, Scalar) and t.name != "bool":
            if isinstance(host, Array):
                problem = f"a scalar ({t})"
            elif t.is_int and isinstance(host, Scalar) and host.is_float:
                problem = f"an integer scalar ({t})"
        elif isinstance(t, Array) and isinstance(host, Scalar):
            problem = f"an array ({t})"
        elif isinstance(t, Vector | Matrix | Quaternion | Transform) and isinstance(host, Scalar):
            problem = f"a {type(t).__name__.lower()} ({t})"
        if problem is None:
            return None
        what = "a Warp array" if isinstance(host, Array) else f"a {'float' if host.is_float else 'int'}"
        return problem, f"{what} ({origin})", severity

    def _host_array(self, ctx: RuleContext, site: LaunchSite, arg: ast.expr) -> bool:
        node: ast.expr = arg
        if isinstance(node, ast.Name):
            if node.id in site.host_arrays:
                return True
            alias = site.local_aliases.get(node.id)
            if alias is None:
                return False
            node = alias
        if isinstance(node, ast.Call):
            return ctx.imports.warp_name(node.func) in _ARRAY_FACTORIES
        return False


def _declared(ctx: RuleContext, site: LaunchSite, name: str) -> tuple[Array | Scalar, str, Severity] | None:
    """What the function around a launch says the value of ``name`` is: (its type, where that is said,
    how sure it is). A literal assigned once there; else, for a parameter the function never rebinds, its
    annotation, or the literal default of an unannotated one. Bools (accepted by any scalar) are left out."""
    scope = site.scope
    alias = site.local_aliases.get(name)
    if alias is not None:
        number = _literal_number(alias)
        if isinstance(number, bool) or number is None or name in _declared_global(scope):
            return None
        return (
            Scalar("float32" if isinstance(number, float) else "int32"),
            (f"`{name} = {ctx.source_of(alias)}`"),
            Severity.ERROR,
        )
    if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    args = scope.args
    positional = [*args.posonlyargs, *args.args]
    param = next((a for a in [*positional, *args.kwonlyargs] if a.arg == name), None)
    if param is None or name in _rebound_in(scope):
        return None
    if param.annotation is not None:
        declared = ctx.resolver.resolve(param.annotation)
        if (isinstance(declared, Scalar) and declared.name != "bool") or isinstance(declared, Array):
            origin = f"`{name}: {ctx.source_of(param.annotation)}` in `{scope.name}`"
            return declared, origin, Severity.WARNING
        return None
    defaults: dict[str, ast.expr] = dict(
        zip([a.arg for a in positional[len(positional) - len(args.defaults) :]], args.defaults, strict=True)
    )
    keyword_defaults = zip(args.kwonlyargs, args.kw_defaults, strict=True)
    defaults.update({a.arg: d for a, d in keyword_defaults if d is not None})
    default = defaults.get(name)
    value = _literal_number(default) if default is not None else None
    if value is None or isinstance(value, bool) or default is None:
        return None
    kind = Scalar("float32" if isinstance(value, float) else "int32")
    return kind, f"`{name}={ctx.source_of(default)}` in `{scope.name}`", Severity.WARNING


# per scope node, what depends on its subtree alone (kept while the node lives, as the model's indexes are)
_GLOBALS: weakref.WeakKeyDictionary[ast.AST, frozenset[str]] = weakref.WeakKeyDictionary()
_REBOUND: weakref.WeakKeyDictionary[ast.AST, frozenset[str]] = weakref.WeakKeyDictionary()


def _index(scope: ast.AST) -> NodeIndex:
    """Every node of ``scope``'s body (a function's: shared with the model; the module's: all of it)."""
    if isinstance(scope, ast.FunctionDef):
        return full_body_index(scope)
    return NodeIndex(scope.body if isinstance(scope, ast.AsyncFunctionDef) else [scope])


def _declared_global(scope: ast.AST) -> frozenset[str]:
    """Names declared ``global`` or ``nonlocal`` anywhere in ``scope`` (a function, or the module)."""
    names = _GLOBALS.get(scope)
    if names is None:
        index = _index(scope)
        declarations: list[ast.Global | ast.Nonlocal] = [*index.of(ast.Global), *index.of(ast.Nonlocal)]
        names = _GLOBALS[scope] = frozenset(name for node in declarations for name in node.names)
    return names


def _rebound_in(scope: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The names the function's body (or a function nested in it) stores, deletes or declares anywhere; a
    nested function's or lambda's parameter counts too (another variable of that name)."""
    names = _REBOUND.get(scope)
    if names is None:
        index = _index(scope)
        found = {n.id for n in index.of(ast.Name) if not isinstance(n.ctx, ast.Load)}
        found.update(a.arg for a in index.of(ast.arg))
        names = _REBOUND[scope] = frozenset(found.union(_declared_global(scope)))
    return names
