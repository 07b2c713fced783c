"""## WH004 builtin-call

A `wp.<name>` used inside a kernel or function that the installed Warp does not have (a typo
such as `wp.sqroot`), a host-side Warp function called inside a kernel (`wp.launch`,
`wp.synchronize`), or a call of a Warp builtin whose arguments no overload accepts: the wrong
number of arguments, an unknown keyword, or argument types no signature takes (`wp.sqrt(2)`:
`sqrt` takes floats only). Also the checks Warp makes in code once an overload matched: the two
values of `wp.where` must have one type (`wp.where(c, 1, 0.0)` does not build), the value of
`wp.atomic_add` / `atomic_sub` / `atomic_min` / `atomic_max` / `atomic_cas` / `atomic_exch` must
have the array's element type; and builtins Warp has removed but still lists, so that a call raises
(`wp.select`, removed in Warp 1.10: the fix rewrites it as `wp.where` with the two values
swapped). Calls of the `math` module count too: Warp compiles `math.sqrt(x)` as `wp.sqrt(x)`
and refuses `math.hypot`, which has no builtin. Signatures come from the installed Warp's own
builtin registry; a call is reported only when every overload rejects it, and arguments of
unknown type are never held against a call. Outside kernels, every
`wp.<name>` that exists in the `warp` module is fine, and so are names the file itself adds to
`warp` (`import warp.sub.module`, `wp.build_experimental.add_builtin("name", ...)`).

Argument types follow values through calls: `wp.where(c, 1, 2)` is an `int32`, `wp.length(v)` a
`float32`, a module constant declared `wp.constant(wp.uint32(7))` a `uint32`.

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
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from warp_harness.builtins import CallStatus
from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.refined_types import ModuleTypeFacts, RefinedTypes
from warp_harness.model.types import WarpType
from warp_harness.record import Fix, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

if TYPE_CHECKING:
    from warp_harness.builtins import BuiltinTable

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


# calls that may add a name to Warp's module
_REGISTERING = frozenset({"add_builtin", "register_builtin", "setattr"})


def _registrations(ctx: RuleContext, warp_modules: set[str]) -> tuple[set[str], bool]:
    """``warp.<name>`` attributes this file creates: submodules it imports (``import warp.tests.x``) and
    builtins it registers (``wp.build_experimental.add_builtin("name", ...)``); True when it registers
    one whose name is not a literal (then no name can be called unknown). The answer is a set and a flag:
    the nodes are read kind by kind, in no particular order."""
    index = ctx.module_nodes(Fact.REGISTRATIONS)
    names: set[str] = set()
    dynamic = False
    for imported in index.of(ast.Import):
        for alias in imported.names:
            parts = alias.name.split(".")
            if parts[0] == "warp" and len(parts) > 1:
                names.add(parts[1])
    for source in index.of(ast.ImportFrom):
        if source.module and source.level == 0:
            parts = source.module.split(".")
            if parts[0] == "warp" and len(parts) > 1:
                names.add(parts[1])
            elif source.module == "warp":
                names.update(alias.name for alias in source.names)
    for call in index.of(ast.Call):
        func = call.func
        kind = type(func)
        if kind is ast.Attribute:
            attr = func.attr  # type: ignore[attr-defined]
        elif kind is ast.Name:
            attr = func.id  # type: ignore[attr-defined]
        else:
            continue
        if attr not in _REGISTERING:
            continue
        if attr != "setattr":
            first = (
                call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "key"), None)
            )
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            else:
                dynamic = True
        elif call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in warp_modules:
            dynamic = True
    if warp_modules:
        # wp.my_helper = ... adds a name to the module
        assignments: list[ast.Assign | ast.AnnAssign | ast.AugAssign] = [
            *index.of(ast.Assign),
            *index.of(ast.AnnAssign),
            *index.of(ast.AugAssign),
        ]
        for assignment in assignments:
            targets = assignment.targets if isinstance(assignment, ast.Assign) else [assignment.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id in warp_modules
                ):
                    names.add(target.attr)
    return names, dynamic


def _known(table: BuiltinTable, name: str) -> bool:
    """A name that is Warp's (or means something in kernels, or a dunder): never reported unknown."""
    return name in _KERNEL_ONLY or table.warp_attribute_kind(name) is not None or name.startswith("__")


class BuiltinCall(Rule):
    id = "WH004"
    name = "builtin-call"
    summary = "unknown Warp builtin, or a builtin call no overload accepts"
    severity = Severity.ERROR
    priority = 70
    fixable = True

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.REGISTRATIONS, Fact.CONSTANTS, Fact.STRUCTS, Fact.FUNCS})

    def _types(self, ctx: RuleContext, kernel: KernelDef) -> RefinedTypes:
        """The kernel's expression types, with module constants of a declared Warp type
        (``wp.constant(wp.uint32(7))``) taken as that type."""
        facts = ctx.once((self.id, "facts"), lambda: ModuleTypeFacts(ctx.model))
        return RefinedTypes(kernel, ctx.types(kernel), facts, ctx.builtins)

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        imports = ctx.imports
        warp_modules = {local for local, module in imports.modules.items() if module == "warp"}
        table = ctx.builtins
        types: RefinedTypes | None = None
        body = body_index(kernel.node)
        called: set[int] | None = None
        params = {p.name for p in kernel.params}
        # only attributes and calls can be reported
        for node in body.of_any(ast.Attribute, ast.Call):
            if isinstance(node, ast.Attribute):
                value = node.value
                if not (
                    isinstance(value, ast.Name)
                    and value.id in warp_modules
                    and isinstance(node.ctx, ast.Load)
                    and value.id not in params
                ):
                    continue
                if _known(table, node.attr):
                    continue
                # the file's registrations, read only when a name is not Warp's own
                registered, dynamic = ctx.once(
                    (self.id, "registered"), lambda: _registrations(ctx, warp_modules)
                )
                if dynamic or node.attr in registered:
                    continue
                if called is None:
                    called = {id(c.func) for c in body.of(ast.Call) if isinstance(c.func, ast.Attribute)}
                yield self._unknown(ctx, kernel, node, id(node) in called)
                continue
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            func = node.func
            if isinstance(func.value, ast.Name) and func.value.id in warp_modules:
                name = func.attr
                if table.warp_attribute_kind(name) is None and name not in _KERNEL_ONLY:
                    continue  # reported as an unknown name
                if types is None:
                    types = self._types(ctx, kernel)
                record = self._call(ctx, kernel, types, node, name)
                if record is not None:
                    yield record
            else:
                math_name = imports.math_name(func)
                if math_name is None or not isinstance(func.value, ast.Name):
                    continue
                if func.value.id in params:
                    continue
                if types is None:
                    types = self._types(ctx, kernel)
                record = self._math_call(ctx, kernel, types, node, math_name)
                if record is not None:
                    yield record

    def _math_call(
        self, ctx: RuleContext, kernel: KernelDef, types: RefinedTypes, node: ast.Call, name: str
    ) -> Record | None:
        """Warp compiles ``math.<name>(...)`` as its builtin of that name, when it has one."""
        if ctx.builtins.has_builtin(name):
            return self._call(ctx, kernel, types, node, name)
        if not callable(getattr(math, name, None)):
            return None
        similar = [s for s in ctx.builtins.closest(name, n=6) if ctx.builtins.has_builtin(s)][:2]
        return self.report(
            ctx,
            node.func,
            f"`math.{name}` has no Warp builtin; Warp compiles only the math functions it has as builtins",
            kernel=kernel.name,
            expected="a Warp builtin or a @wp.func",
            actual=f"math.{name}",
            hint="write it with Warp builtins or a @wp.func"
            + (f" (close builtins: {', '.join(f'`wp.{s}`' for s in similar)})" if similar else ""),
        )

    def _unknown(self, ctx: RuleContext, kernel: KernelDef, node: ast.Attribute, is_call: bool) -> Record:
        """``wp.<name>`` where ``name`` is not `_known` nor registered by the file."""
        table = ctx.builtins
        name = node.attr
        prefix = ctx.source_of(node.value)
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

    @staticmethod
    def _prefix(ctx: RuleContext, node: ast.Call) -> str:
        """How the call spells Warp's module (``wp``), for messages (only when there is one to write)."""
        return ctx.source_of(node.func.value) if isinstance(node.func, ast.Attribute) else "wp"

    def _call(
        self, ctx: RuleContext, kernel: KernelDef, types: RefinedTypes, node: ast.Call, name: str
    ) -> Record | None:
        table = ctx.builtins
        target = table.kernel_call_target(name)
        if target is None:
            kind = table.warp_attribute_kind(name)
            if kind == "python_function" and name.startswith(_HOST_PREFIXES):
                prefix = self._prefix(ctx, node)
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
        prefix = self._prefix(ctx, node)
        signatures = list(check.signatures[:4])
        shown_args = ", ".join([*map(str, args), *(f"{k}={v}" for k, v in kwargs.items())])
        shown = "; ".join(f"`{s}`" for s in signatures)
        message = f"`{ctx.source_of(node)}`: {check.message}"
        fix: Fix | None = None
        if check.status is CallStatus.BAD_ARITY:
            hint = f"`{prefix}.{name}` takes {check.expected_arity}" + (f": {shown}" if shown else "")
        elif check.status is CallStatus.REMOVED:
            hint = f"`{prefix}.{name}` always raises in Warp {table.warp_version}"
            fix = self._select_fix(ctx, node, prefix) if target == "select" else None
        elif check.status is CallStatus.BAD_VALUES:
            message = f'`{ctx.source_of(node)}`: Warp: "{check.message}"'
            hint = (
                "give both values the same type (a literal of the other's type, or a conversion such as "
                "`float(x)` / `int(x)`)"
                if target == "where"
                else "give the value the array's element type (a literal of that type, or a conversion)"
            )
        else:
            hint = "convert the arguments to a type a signature accepts" + (f": {shown}" if shown else "")
        return self.report(
            ctx,
            node,
            message,
            kernel=kernel.name,
            expected=list(check.signatures) or check.expected_arity,
            actual=f"{prefix}.{name}({shown_args})",
            hint=hint,
            fix=fix,
        )

    def _select_fix(self, ctx: RuleContext, node: ast.Call, prefix: str) -> Fix | None:
        """``wp.select(c, a, b)`` -> ``wp.where(c, b, a)``: the same result (``select`` took the false
        value first)."""
        if len(node.args) != 3 or node.keywords:
            return None
        cond, when_false, when_true = (ctx.source_of(a) for a in node.args)
        text = f"{prefix}.where({cond}, {when_true}, {when_false})"
        return Fix(f"Replace with `{text}`", (ctx.replace(node, text),), safe=True)
