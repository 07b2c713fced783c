"""## WH021 launch-array-dtype

An array passed to a `wp.launch` / `wp.launch_tiled` whose element type certainly differs from the
kernel parameter's annotation:

- a NumPy array passed directly, whose scalar type is not the parameter's: `np.zeros(n)`,
  `np.array([0.0, 1.0])`, `np.linspace(...)` and `np.random.rand(n)` are float64 unless told
  otherwise, so they do not fit `wp.array(dtype=float)` (float32) nor `wp.array(dtype=wp.vec3)`;
- a Warp array of another element type: `wp.zeros(n, dtype=wp.float64)` or `wp.array(np_float64)`
  (Warp keeps NumPy's float64) for a `float32` parameter, a `wp.vec3` array where
  `wp.array(dtype=float)` is expected, `wp.zeros(n)` (float32 by default) for an `int` parameter.

Only arrays whose type is certain are judged: made in the launch's own arguments, assigned once in
the launching function (`pos = np.zeros(n)`), or assigned to `self.<attr>` in the launching class
and nowhere else in the file. Platform-dependent integer defaults (`np.arange(n)`,
`np.array([1, 2])`), arrays from parameters, from other modules or from arithmetic, and generic
(`dtype=Any`) or struct parameters are left alone.

### Why it matters
Warp checks every array argument's element type when the launch runs (after the module has
been built): a NumPy array fails with `RuntimeError: Could not convert array interface with
typestr='<f8' to Warp array with dtype=<class 'warp.types.float32'>` (and on a CUDA device no
NumPy array is accepted at all), a Warp array with `Error launching kernel 'k', argument 'x'
expects an array with dtype=<class 'warp.types.float32'> but passed array has
dtype=<class 'warp.types.float64'>`.

Where the array comes from a NumPy or Warp allocation that took its default type, the fix
(unsafe: the array's other uses see the new type too) passes the parameter's type: `np.zeros(n,
dtype=np.float32)`, `wp.array(vertices, dtype=wp.vec3)`.

### Bad
```python
import numpy as np

@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s

x = wp.array(np.linspace(0.0, 1.0, 64))
wp.launch(scale, dim=64, inputs=[x, 2.0])
```

### Good
```python
import numpy as np

@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * s

x = wp.array(np.linspace(0.0, 1.0, 64), dtype=float)
wp.launch(scale, dim=64, inputs=[x, 2.0])
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warp_harness.model.host_dtypes import (
    HostArrayType,
    HostDtypes,
    element_scalar,
    type_text,
    warp_type_name,
)
from warp_harness.model.kernel import KernelDef, Param
from warp_harness.model.launches import LaunchSite
from warp_harness.model.types import Array, WarpType
from warp_harness.model.walk import walk
from warp_harness.record import Fix, Record, Related, Severity, TextEdit
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope
from warp_harness.rules.queries import definition_location, empty_launch, launch_arguments, launch_kernel

# NumPy allocations whose default element type the fix may override with a `dtype=` keyword
# (and the position of their `dtype` parameter: a call with that many positional arguments passes one)
_NUMPY_DTYPE_POSITION = {
    "zeros": 1,
    "ones": 1,
    "empty": 1,
    "identity": 1,
    "array": 1,
    "asarray": 1,
    "full": 2,
    "eye": 3,
    "arange": 3,
    "linspace": 5,
}
_WARP_DTYPE_POSITION = {"zeros": 1, "ones": 1, "empty": 1, "array": 1, "from_numpy": 1}


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _mismatch(found: HostArrayType, wanted: WarpType) -> bool:
    """Whether Warp's launch refuses ``found`` for a parameter of element type ``wanted``."""
    scalar = element_scalar(wanted)
    if scalar is None:
        return False
    if found.interop or found.dtype is None:
        return found.scalar != scalar
    return found.dtype != wanted


class LaunchArrayDtype(Rule):
    id = "WH021"
    name = "launch-array-dtype"
    summary = "an array passed to a launch whose element type differs from the kernel parameter's"
    severity = Severity.ERROR
    priority = 65
    fixable = True

    scope = Scope.LAUNCH
    reads = frozenset({Fact.IMPORTS, Fact.KERNELS, Fact.SCOPES, Fact.CONSTANTS, Fact.STRUCTS})

    def check_launch(self, ctx: RuleContext, site: LaunchSite) -> Iterator[Record]:
        kernel = launch_kernel(ctx, site)
        if kernel is None:
            return
        args = launch_arguments(site)
        if args is None or len(args) != len(kernel.params) or empty_launch(ctx, site):
            return  # WH006 reports a count mismatch; an empty launch checks nothing
        host = ctx.once(
            (self.id, "host"),
            lambda: HostDtypes(ctx.source.tree, ctx.imports, ctx.resolver, ctx.module_nodes(Fact.SCOPES)),
        )
        for arg, param in zip(args, kernel.params, strict=True):
            t = param.type
            if not isinstance(t, Array) or t.kind != "array" or element_scalar(t.dtype) is None:
                continue  # (`_mismatch` finds none for an element type of no known scalar)
            found = host.array_type(arg, site.scope, site.local_aliases)
            if found is None or not _mismatch(found, t.dtype):
                continue
            yield self._report(ctx, kernel, param, t, arg, found)

    def _report(
        self, ctx: RuleContext, kernel: KernelDef, param: Param, t: Array, arg: ast.expr, found: HostArrayType
    ) -> Record:
        wanted = element_scalar(t.dtype)
        related = [Related(definition_location(ctx, kernel), f"kernel `{kernel.name}` is defined here")]
        if found.origin is not arg and not _inside(arg, found.origin):
            related.append(Related(ctx.location(found.origin), "the array is made here"))
        if found.interop:
            typestr = f"<{found.scalar.name[0]}{found.scalar.byte_size}"
            warp_says = (
                f"Warp raises at launch: `Could not convert array interface with typestr='{typestr}' "
                f"to Warp array with dtype={type_text(t.dtype)}`"
            )
            hint = f"make it a {wanted} array (`dtype=np.{wanted}` where it is made), or pass a Warp array"
        else:
            passed = type_text(found.dtype or found.scalar)
            warp_says = (
                f"Warp raises at launch: `argument '{param.name}' expects an array with "
                f"dtype={type_text(t.dtype)} but passed array has dtype={passed}`"
            )
            hint = f"allocate it with the parameter's type ({type_text(t.dtype)}), or change the annotation"
        return self.report(
            ctx,
            arg,
            f"argument `{_short(ctx.source_of(arg))}` for parameter `{param.name}` of `{kernel.name}` is "
            f"{self._describe(found)}, but the parameter is an array of {type_text(t.dtype)}: {warp_says}",
            kernel=kernel.name,
            expected=type_text(t.dtype),
            actual=type_text(found.dtype if found.dtype is not None and not found.interop else found.scalar),
            hint=hint,
            fix=self._fix(ctx, found, t.dtype),
            related=related,
        )

    @staticmethod
    def _describe(found: HostArrayType) -> str:
        if found.interop:
            return f"a {found.scalar} NumPy array"
        return f"a Warp array of {type_text(found.dtype if found.dtype is not None else found.scalar)}"

    # fixes -------------------------------------------------------------------------------------
    def _fix(self, ctx: RuleContext, found: HostArrayType, wanted: WarpType) -> Fix | None:
        call = found.origin
        if not isinstance(call, ast.Call) or any(kw.arg == "dtype" or kw.arg is None for kw in call.keywords):
            return None
        imports = ctx.imports
        text: str | None = None
        path = imports.dotted(call.func) or ""
        numpy_name = path[len("numpy.") :] if path.startswith("numpy.") else ""
        warp_name = imports.warp_name(call.func) or ""
        if found.interop and numpy_name in _NUMPY_DTYPE_POSITION:
            scalar = element_scalar(wanted)
            alias = next((local for local, module in imports.modules.items() if module == "numpy"), None)
            if scalar is None or alias is None or len(call.args) > _NUMPY_DTYPE_POSITION[numpy_name]:
                return None
            text = f"dtype={alias}.{scalar.name}"
        elif not found.interop and warp_name in _WARP_DTYPE_POSITION:
            name = warp_type_name(wanted)
            alias = next((local for local, module in imports.modules.items() if module == "warp"), None)
            if name is None or alias is None or len(call.args) > _WARP_DTYPE_POSITION[warp_name]:
                return None
            text = f"dtype={alias}.{name}"
        if text is None:
            return None
        edit = self._add_keyword(ctx, call, text)
        if edit is None:
            return None
        # the array's other uses see the new element type too
        return Fix(f"pass `{text}`", (edit,), safe=False)

    def _add_keyword(self, ctx: RuleContext, call: ast.Call, text: str) -> TextEdit | None:
        """Insert ``text`` as the call's last argument (calls on one line, without a trailing comma)."""
        end = ctx.location(call)
        if end.end_line != end.line or end.end_col is None:
            return None
        line = ctx.source.lines[end.line - 1]
        close = end.end_col - 1
        if close < 0 or line[close] != ")":
            return None
        before = line[:close].rstrip()
        if before.endswith(","):
            return None
        separator = "" if before.endswith("(") else ", "
        return TextEdit(end.line, close, end.line, close, f"{separator}{text}")


def _inside(outer: ast.AST, node: ast.AST) -> bool:
    return any(n is node for n in walk(outer))
