"""## WH004 builtin-call

A `wp.<name>` used inside a kernel or function that the installed Warp does not have (a typo
such as `wp.sqroot`), a host-side Warp function called inside a kernel (`wp.launch`,
`wp.synchronize`), or a call of a Warp builtin whose arguments no overload accepts: the wrong
number of arguments, an unknown keyword, or argument types no signature takes (`wp.sqrt(2)`:
`sqrt` takes floats only). Signatures come from the installed Warp's own builtin registry; a
call is reported only when every overload rejects it, and arguments of unknown type are never
held against a call. Outside kernels, every `wp.<name>` that exists in the `warp` module is
fine.

The fix for an unknown name replaces it with the closest existing one.

### Why it matters
Warp only resolves names and overloads when it builds the module: `Could not find function
wp.sqroot as a built-in or user-defined function`, or `Couldn't find function overload for
'sqrt' that matched inputs with types: [int32]`, after importing the module and building
everything before it.

### Bad
```python
@wp.kernel
def norm(x: wp.array(dtype=float), n: wp.array(dtype=int)):
    i = wp.tid()
    x[i] = wp.sqroot(x[i])
    x[i] = wp.sqrt(n[i])
```

### Good
```python
@wp.kernel
def norm(x: wp.array(dtype=float), n: wp.array(dtype=int)):
    i = wp.tid()
    x[i] = wp.sqrt(x[i])
    x[i] = wp.sqrt(float(n[i]))
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.inference import KernelTypes
from warp_harness.model.kernel import KernelDef
from warp_harness.model.types import WarpType
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Rule, RuleContext, walk_body
from warp_harness.rules.wh009_tile_matmul_shape import source_text

# names that are not attributes of the warp module yet mean something inside kernels
_KERNEL_ONLY = {"tid", "static"}
# host-side functions (runtime, devices, streams, interop): never callable in a kernel. Others without
# a kernel builtin of the same name (`wp.grad(f)(x)`, `wp.overload`...) may be special forms: not reported
_HOST_PREFIXES = (
    "launch",
    "synchronize",
    "capture_",
    "set_",
    "get_",
    "is_",
    "load_",
    "to_",
    "from_",
    "device_",
    "stream_",
    "event_",
    "timing_",
    "print_",
    "clear_",
    "record_event",
    "wait_",
    "init",
    "compile_aot_module",
    "force_load",
    "map_cuda_device",
    "unmap_cuda_device",
    "dtype_",
)


class BuiltinCall(Rule):
    id = "WH004"
    name = "builtin-call"
    summary = "unknown Warp builtin, or a builtin call no overload accepts"
    severity = Severity.ERROR
    priority = 70
    fixable = True

    def check(self, ctx: RuleContext) -> Iterator[Record]:
        imports = ctx.model.imports
        warp_modules = {local for local, module in imports.modules.items() if module == "warp"}
        if not warp_modules:
            return
        table = ctx.builtins
        for kernel in ctx.model.kernels:
            if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
                continue
            types: KernelTypes | None = None
            called: set[int] = set()
            for node in walk_body(kernel.node):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    called.add(id(node.func))
            for node in walk_body(kernel.node):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in warp_modules
                    and isinstance(node.ctx, ast.Load)
                    and node.value.id not in {p.name for p in kernel.params}
                ):
                    record = self._unknown(ctx, kernel, node, id(node) in called)
                    if record is not None:
                        yield record
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in warp_modules
                ):
                    name = node.func.attr
                    if table.warp_attribute_kind(name) is None and name not in _KERNEL_ONLY:
                        continue  # reported as an unknown name
                    if types is None:
                        types = ctx.model.types(kernel)
                    record = self._call(ctx, kernel, types, node, name)
                    if record is not None:
                        yield record

    def _unknown(
        self, ctx: RuleContext, kernel: KernelDef, node: ast.Attribute, is_call: bool
    ) -> Record | None:
        table = ctx.builtins
        name = node.attr
        if name in _KERNEL_ONLY or table.warp_attribute_kind(name) is not None or name.startswith("__"):
            return None
        prefix = source_text(ctx, node.value)
        suggestions = table.closest(name, n=6)
        if is_call:
            callable_here = [
                s
                for s in suggestions
                if table.kernel_call_target(s) is not None or table.warp_attribute_kind(s) == "warp_function"
            ]
            suggestions = callable_here or suggestions
        best = suggestions[0] if suggestions else None
        version = table.warp_version
        fix = (
            Fix(f"Replace with `{prefix}.{best}`", (ctx.replace(node, f"{prefix}.{best}"),), safe=False)
            if best
            else None
        )
        what = "function" if is_call else "name"
        hint = f"did you mean `{prefix}.{best}`?" if best else "check the name in Warp's documentation"
        if best and len(suggestions) > 1:
            others = ", ".join(f"`{prefix}.{s}`" for s in suggestions[1:3])
            hint = f"did you mean `{prefix}.{best}`? (also close: {others})"
        return self.report(
            ctx,
            node,
            f"`{prefix}.{name}` is not a Warp {what} (warp {version} has no `{name}`)",
            kernel=kernel.name,
            expected=f"{prefix}.{best}" if best else "an existing Warp builtin",
            actual=f"{prefix}.{name}",
            hint=hint,
            fix=fix,
        )

    def _call(
        self, ctx: RuleContext, kernel: KernelDef, types: KernelTypes, node: ast.Call, name: str
    ) -> Record | None:
        table = ctx.builtins
        prefix = source_text(ctx, node.func.value) if isinstance(node.func, ast.Attribute) else "wp"
        target = table.kernel_call_target(name)
        if target is None:
            kind = table.warp_attribute_kind(name)
            if kind == "python_function" and name.startswith(_HOST_PREFIXES):
                return self.report(
                    ctx,
                    node.func,
                    f"`{prefix}.{name}` is a host-side Warp function; "
                    f"it cannot be called inside a {kernel.kind}",
                    kernel=kernel.name,
                    expected="a Warp builtin or a @wp.func",
                    actual=f"{prefix}.{name}",
                    hint=f"call `{prefix}.{name}` from the Python code around the launch, not from the "
                    f"{kernel.kind}",
                )
            return None
        if any(isinstance(a, ast.Starred) for a in node.args) or any(kw.arg is None for kw in node.keywords):
            return None
        builtin = table.get(target)
        if builtin is None:
            return None
        args: list[WarpType] = [types.of(a) for a in node.args]
        kwargs: dict[str, WarpType] = {kw.arg: types.of(kw.value) for kw in node.keywords if kw.arg}
        check = table.check_call(target, args, kwargs)
        if not check.is_error:
            return None
        signatures = list(check.signatures[:4])
        shown_args = ", ".join([*map(str, args), *(f"{k}={v}" for k, v in kwargs.items())])
        shown = "; ".join(f"`{s}`" for s in signatures)
        if check.status.value == "bad_arity":
            message = f"`{source_text(ctx, node)}`: {check.message}"
            hint = f"`{prefix}.{name}` takes {check.expected_arity}" + (f": {shown}" if shown else "")
        else:
            message = f"`{source_text(ctx, node)}`: {check.message}"
            hint = "convert the arguments to a type a signature accepts" + (f": {shown}" if shown else "")
        return self.report(
            ctx,
            node,
            message,
            kernel=kernel.name,
            expected=list(check.signatures) or check.expected_arity,
            actual=f"{prefix}.{name}({shown_args})",
            hint=hint,
        )
