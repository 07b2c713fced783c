"""## WH002 unsupported-construct

A Python construct that Warp's code generator cannot translate appears in a kernel or function:
comprehensions and generator expressions, `lambda`, `try`/`except`, `with`, `yield`, `await`,
nested `def`/`class`, `global`/`nonlocal`, `del`, f-strings, `*args`/`**kwargs` parameters,
and calls to plain Python functions such as `sum`, `len` on a list, `print` of an f-string...

Functions of the `math` module that Warp maps to its builtins (`math.sqrt`, `math.sin`, ...) and
the Python builtins Warp understands (`range`, `min`, `max`, `abs`, `int`, `float`, `bool`, `len`,
`print`, `isinstance`, `round`, `pow`) are fine and are not reported.

### Why it matters
Warp fails at build time with `WarpCodegenError: Construct ast.ListComp not supported in kernels`
or `Could not find function sum as a built-in or user-defined function`, after the import and
often after a multi-second compile of everything else.

### Bad
```python
@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    out[0] = sum([x[j] for j in range(4)])
```

### Good
```python
@wp.kernel
def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    s = float(0.0)
    for j in range(4):
        s += x[j]
    out[0] = s
```
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warp_harness.model.index import body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.record import QUOTED_LINE, Record, Severity
from warp_harness.rules.base import Fact, Rule, RuleContext, Scope

_CONSTRUCTS: dict[type[ast.AST], str] = {
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.Lambda: "a lambda",
    ast.Try: "try/except",
    ast.With: "a with statement",
    ast.AsyncWith: "an async with statement",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
    ast.Await: "await",
    ast.FunctionDef: "a nested function definition",
    ast.AsyncFunctionDef: "a nested function definition",
    ast.ClassDef: "a class definition",
    ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement",
    ast.Delete: "a del statement",
    ast.JoinedStr: "an f-string",
    ast.Set: "a set literal",
    ast.Dict: "a dict literal",
    ast.AsyncFor: "an async for loop",
    ast.Raise: "raise",
}
if hasattr(ast, "TryStar"):
    _CONSTRUCTS[ast.TryStar] = "try/except*"

# Python builtins Warp's code generator accepts inside kernels (checked against Warp 1.19); `slice`
# is also a Warp builtin (tile views), its overloads are WH004's business
_ALLOWED_PY_BUILTINS = frozenset(
    {
        "range",
        "min",
        "max",
        "abs",
        "int",
        "float",
        "bool",
        "len",
        "print",
        "round",
        "pow",
        "reversed",
        "type",
        "tuple",
        "slice",
    }
)
# Python builtins Warp rejects ("Could not find function sum as a built-in or user-defined function")
_PY_BUILTINS = frozenset(
    {
        "sum",
        "sorted",
        "map",
        "filter",
        "list",
        "dict",
        "set",
        "any",
        "all",
        "open",
        "input",
        "str",
        "repr",
        "format",
        "iter",
        "next",
        "divmod",
        "hash",
        "id",
        "getattr",
        "setattr",
        "hasattr",
        "vars",
        "dir",
        "eval",
        "exec",
        "compile",
        "chr",
        "ord",
        "hex",
        "oct",
        "bin",
        "complex",
        "bytes",
        "bytearray",
        "frozenset",
        "object",
        "super",
        "callable",
        "memoryview",
        "enumerate",
        "zip",
        "isinstance",
    }
)


class UnsupportedConstruct(Rule):
    id = "WH002"
    name = "unsupported-construct"
    summary = "Python construct Warp cannot compile in a kernel or function"
    severity = Severity.ERROR
    priority = 80

    scope = Scope.KERNEL_OR_FUNC
    reads = frozenset({Fact.IMPORTS, Fact.KERNELS, Fact.SCOPES, Fact.CONSTANTS})

    def check_kernel(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        names = ctx.once((self.id, "names"), lambda: _ModuleNames.of(ctx))
        if kernel.kind not in ("kernel", "func") or not kernel.has_python_body:
            return
        yield from self._check_kernel(ctx, kernel, names)
        yield from self._check_signature(ctx, kernel)

    def _check_signature(self, ctx: RuleContext, kernel: KernelDef) -> Iterator[Record]:
        args = kernel.node.args
        for extra, what in ((args.vararg, "*args"), (args.kwarg, "**kwargs")):
            if extra is not None:
                yield self.report(
                    ctx,
                    extra,
                    f"{what} parameters are not supported in Warp {kernel.kind}s",
                    kernel=kernel.name,
                    actual=what,
                    expected="named, annotated parameters",
                    hint="list each parameter with its type",
                )

    def _check_kernel(self, ctx: RuleContext, kernel: KernelDef, names: _ModuleNames) -> Iterator[Record]:
        skip: set[int] = set()
        params = {p.name for p in kernel.params}
        # only these are reported or skipped (a skipped node's descendants are in `skip` too)
        for node in body_index(kernel.node).of_any(ast.Assert, ast.Call, *_CONSTRUCTS):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Assert) or (
                isinstance(node, ast.Call) and ctx.imports.warp_name(node.func) == "static"
            ):
                # wp.static(...) is evaluated by Python at codegen time; release builds drop asserts
                skip.update(id(n) for n in ast.walk(node))
                continue
            what = _CONSTRUCTS.get(type(node))
            if what is not None:
                # report the outermost construct once
                skip.update(id(n) for n in ast.walk(node))
                yield self.report(
                    ctx,
                    node,
                    f"{what} is not supported inside a Warp {kernel.kind}",
                    kernel=kernel.name,
                    actual=what,
                    expected="constructs Warp's code generator supports",
                    hint=_hint_for(node),
                )
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                if name in params:
                    continue
                plain = names.plain_functions.get(name)
                if plain is not None:
                    yield self.report(
                        ctx,
                        node.func,
                        f"`{name}` is a plain Python function (line {QUOTED_LINE}), not a `@wp.func`; "
                        f"Warp cannot call it from a {kernel.kind}",
                        kernel=kernel.name,
                        actual=name,
                        expected="a Warp builtin or a @wp.func",
                        hint=f"decorate `{name}` with `@wp.func` and annotate its parameters",
                        lines=(plain.lineno,),
                    )
                elif name in _PY_BUILTINS and name not in names.defined:
                    yield self.report(
                        ctx,
                        node.func,
                        f"`{name}()` is a plain Python function; Warp cannot call it from a {kernel.kind}",
                        kernel=kernel.name,
                        actual=name,
                        expected="a Warp builtin or a @wp.func",
                        hint="write the loop out (e.g. accumulate with `+=` in a `for` over `range`)"
                        if name in ("sum", "any", "all", "map", "filter")
                        else f"replace `{name}()` with a Warp builtin or a @wp.func",
                    )


@dataclass(eq=False, repr=False)
class _ModuleNames:
    """Module-level names: which are undecorated plain functions, which shadow Python builtins."""

    plain_functions: dict[str, ast.FunctionDef]
    defined: set[str]

    @classmethod
    def of(cls, ctx: RuleContext) -> _ModuleNames:
        imports = ctx.imports
        defined = {k.name for k in ctx.all_kernels} | set(imports.objects) | set(imports.modules)
        defs: dict[str, list[ast.FunctionDef]] = {}
        for stmt in ctx.module_body(Fact.SCOPES):
            if isinstance(stmt, ast.FunctionDef):
                defs.setdefault(stmt.name, []).append(stmt)
                defined.add(stmt.name)
            elif isinstance(stmt, ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                defined.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        rebound = defined - {name for name, found in defs.items() if found}
        assigned = _assigned_at_module_level(ctx.source.tree)
        plain = {
            name: found[0]
            for name, found in defs.items()
            if len(found) == 1
            and not found[0].decorator_list
            and name not in rebound
            and name not in assigned
            and name not in imports.objects
            and name not in imports.modules
        }
        return cls(plain, defined)


def _assigned_at_module_level(tree: ast.Module) -> set[str]:
    assigns = [s for s in tree.body if isinstance(s, ast.Assign)]
    return {t.id for s in assigns for t in s.targets if isinstance(t, ast.Name)}


def _hint_for(node: ast.AST) -> str:
    if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
        return "use a `for` loop over `range(...)` and accumulate into a local variable"
    if isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
        return "move it to module level as a `@wp.func`"
    if isinstance(node, ast.Try | ast.Raise):
        return "kernels cannot raise; check the condition and `return` early instead"
    if isinstance(node, ast.With):
        return "move the `with` block to the host code that launches the kernel"
    return "rewrite it with loops, branches and Warp builtins"
