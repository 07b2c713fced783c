"""The contract a kernel module defines itself, taken from its text without running the module
(issue #37 item 1, for contracts that are not in a sibling ``<module>_contract.py``).

Importing a module runs all of its top-level code, in whichever worker imports it. A contract
defined next to its kernel is extracted the way the kernel is built (``hermetic_build``): its
top-level ``Contract(...)`` statements (``x = Contract(...)``, ``@contract.define(...)`` on a
``def``, ``__contracts__ = [...]``) and only what they reach, resolved by name through the
module's text: plain ``def``s (reference functions, input generators), assignments of
expressions made only of literals, lambdas, containers and calls of a few pure library
functions (``int``, ``os.environ.get``, ``np.float32``, ``math.sqrt``, Warp's types and
``wp.constant``), the harness's ``Contract``/``Tolerance``/``EdgeCase``/``define``, and imports
of numpy, Warp, math, the standard library and ``warp_harness.contract``. Those statements run,
in source order, in the namespace the hermetic kernel build made, so the contract's functions
see the built kernels and constants as their globals, and nothing else of the module.

The extraction is refused (``NotHermetic``, the module is then imported as before and its
verdicts carry WHD069) when what the contract reaches is not such a statement: a call at import
of anything else (a factory, a function of the module), a class, a name bound twice, bound by
top-level control flow or through ``global`` in a function, a name the text never binds, an
import from the workspace; when top-level code the extraction leaves out reads or changes a
name the contract reaches (it could change the contract at import); or when a contract is made
anywhere else than in such a statement (inside a function, through an alias of ``Contract``).

Text only: no Warp, nothing executed (the supervisor decides WHD069 with it).
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from dataclasses import dataclass, field

from warp_harness.model.imports import ImportMap


class NotHermetic(Exception):
    """The kernel (or its contract) cannot be built from its source alone (the message says why)."""


_HARNESS = "warp_harness.contract"
_HARNESS_CALLS = {f"{_HARNESS}.{n}" for n in ("Contract", "Tolerance", "EdgeCase", "define")}
_MAKERS = {f"{_HARNESS}.Contract", f"{_HARNESS}.define"}
# libraries a contract may import besides the standard library (none of them workspace code)
_LIBRARIES = {"numpy", "warp", "math", "scipy"}
_PURE_BUILTINS = {
    "int", "float", "bool", "str", "complex", "tuple", "list", "dict", "set", "frozenset", "range",
    "len", "abs", "min", "max", "round", "sorted", "sum", "zip", "enumerate", "reversed", "pow",
}  # fmt: skip
_PURE_CALLS = {"os.environ.get", "os.getenv"}
# numpy functions that call what they are given, or change the process's numpy state
_NUMPY_NOT_PURE = {
    "seterr", "seterrcall", "set_printoptions", "setbufsize", "load", "save", "savez",
    "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile", "memmap", "frompyfunc",
    "vectorize", "piecewise", "apply_along_axis", "apply_over_axes", "fromfunction", "fromiter",
}  # fmt: skip
# Warp calls whose value is the same in every process (no device query: the verdict worker sees
# no GPU, a `wp.get_cuda_device_count()` there is another number than in the kernel's worker)
_WARP_PURE = re.compile(r"^(constant|u?int\d+|float\d+|bool|vec\w*|mat\w*|quat\w*|transform\w*|spatial_\w+)$")
_SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


@dataclass
class ContractPlan:
    """What the contract statements of a module need executed: top-level statements (by index
    in the module's body, in source order) and the imports they reach (local name -> (module,
    attribute or None))."""

    statements: set[int] = field(default_factory=set)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    kernel_names: set[str] = field(default_factory=set)  # names the kernel build must make
    future: list[int] = field(default_factory=list)  # `from __future__ import ...` statements


def _is_main_guard(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def _bindings(node: ast.stmt) -> list[str]:
    """Every name a top-level statement binds, control flow included."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    out: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, _SCOPES):
            continue
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            out.append(sub.id)
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and sub is not node:
            out.append(sub.name)
    return out


def _scope_bound(node: ast.AST) -> set[str]:
    """The names a function, lambda or comprehension binds for itself (not through ``global``)."""
    bound: set[str] = set()
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        a = node.args
        bound |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
        bound |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
        body: list[ast.AST] = list(node.body) if isinstance(node.body, list) else [node.body]
    else:
        assert isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp)
        body = [g.target for g in node.generators]
    declared: set[str] = set()
    todo = list(body)
    while todo:
        sub = todo.pop()
        if isinstance(sub, ast.Global | ast.Nonlocal):
            declared |= set(sub.names)
        elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            bound.add(sub.id)
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(sub.name)
            todo.extend(sub.decorator_list)
            continue  # its own scope
        elif isinstance(sub, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in sub.names}
        if isinstance(sub, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            continue
        todo.extend(ast.iter_child_nodes(sub))
    return bound - declared


def free_names(node: ast.AST, bound: frozenset[str] = frozenset()) -> set[str]:
    """The names ``node`` reads from the module's globals (not bound in an enclosing function,
    lambda or comprehension of it)."""
    out: set[str] = set()
    if isinstance(node, _SCOPES):
        inner = bound | _scope_bound(node)
        inside: list[ast.AST] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            # defaults and decorators are read in the enclosing scope, the body in the function's
            for outside in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
                out |= free_names(outside, bound)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for outside in node.decorator_list:
                    out |= free_names(outside, bound)
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    if arg.annotation is not None:
                        out |= free_names(arg.annotation, bound)
                if node.returns is not None:
                    out |= free_names(node.returns, bound)
                inside = list(node.body)
            else:
                inside = [node.body]
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            gens = node.generators
            out |= free_names(gens[0].iter, bound)  # the first iterable is read outside
            inside.extend(g.target for g in gens)
            inside.extend(g.iter for g in gens[1:])
            inside.extend(c for g in gens for c in g.ifs)
            inside.extend([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        for sub in inside:
            out |= free_names(sub, inner)
        return out
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
        out.add(node.id)
    for child in ast.iter_child_nodes(node):
        out |= free_names(child, bound)
    return out


def import_time_nodes(node: ast.stmt) -> list[ast.AST]:
    """The parts of a top-level statement evaluated when the module is imported (not the bodies
    of its functions and lambdas)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        a = node.args
        parts: list[ast.AST] = [
            *node.decorator_list,
            *a.defaults,
            *[d for d in a.kw_defaults if d is not None],
        ]
        parts += [x.annotation for x in [*a.posonlyargs, *a.args, *a.kwonlyargs] if x.annotation is not None]
        return parts + ([node.returns] if node.returns is not None else [])
    if isinstance(node, ast.ClassDef):
        return [node]
    return [node]


def _walk_import_time(node: ast.AST) -> list[ast.AST]:
    """``ast.walk`` that does not enter lambda bodies (only their defaults run at import)."""
    out: list[ast.AST] = []
    todo = [node]
    while todo:
        sub = todo.pop()
        out.append(sub)
        if isinstance(sub, ast.Lambda):
            todo.extend([*sub.args.defaults, *[d for d in sub.args.kw_defaults if d is not None]])
            continue
        todo.extend(ast.iter_child_nodes(sub))
    return out


class _Resolver:
    def __init__(self, tree: ast.Module, kernel_defs: set[str], rebound: set[str]) -> None:
        self.tree = tree
        self.kernel_defs = kernel_defs  # names the kernel build knows (kernels, funcs, structs, constants)
        # the module's own top-level imports (one inside a function binds no module-level name)
        imports: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        self.imports = ImportMap.from_tree(ast.Module(body=imports, type_ignores=[]))
        self.bound_at: dict[str, list[int]] = {}
        for i, node in enumerate(tree.body):
            if _is_main_guard(node):
                continue
            for name in _bindings(node):
                self.bound_at.setdefault(name, []).append(i)
        self.rebound = rebound
        # the names a function rebinds through `global` (one walk: each node with the function it is in)
        self.globals_declared: dict[str, str] = {}
        todo: list[tuple[ast.AST, str | None]] = [(tree, None)]
        while todo:
            sub, function = todo.pop()
            if isinstance(sub, ast.Global) and function is not None:
                for name in sub.names:
                    self.globals_declared.setdefault(name, function)
            if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                function = sub.name
            todo.extend((child, function) for child in ast.iter_child_nodes(sub))

    def dotted(self, node: ast.expr) -> str | None:
        path = self.imports.dotted(node)
        if path is None and isinstance(node, ast.Name) and node.id not in self.bound_at:
            return f"builtins.{node.id}" if hasattr(builtins, node.id) else None
        return path

    def harness_call(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Call):
            path = self.dotted(node.func)
            if path in _HARNESS_CALLS:
                return path
        return None

    def pure_call(self, call: ast.Call) -> str | None:
        """Why a call evaluated at import is not allowed (None: it is)."""
        path = self.dotted(call.func)
        if path in _HARNESS_CALLS or path in _PURE_CALLS:
            return None
        if path is not None:
            parts = path.split(".")
            if parts[0] == "builtins" and parts[1] in _PURE_BUILTINS:
                return None
            if parts[0] == "math" and len(parts) == 2:
                return None
            if parts[0] == "numpy" and len(parts) == 2 and parts[1] not in _NUMPY_NOT_PURE:
                return None
            if parts[0] == "warp" and len(parts) == 2 and _WARP_PURE.match(parts[1]):
                return None
        shown = ast.unparse(call.func)
        return (
            f"calls `{shown}(...)` at import (line {call.lineno}): code that runs when the module is imported"
        )


def _check_import_time(resolver: _Resolver, node: ast.stmt) -> None:
    for part in import_time_nodes(node):
        for sub in _walk_import_time(part):
            if isinstance(sub, ast.Call):
                why = resolver.pure_call(sub)
                if why is not None:
                    raise NotHermetic(f"the contract {why}")
            elif isinstance(sub, ast.Attribute) and sub.attr.startswith("__"):
                raise NotHermetic(f"the contract reads `{ast.unparse(sub)}` at import (line {sub.lineno})")
            elif isinstance(sub, ast.Yield | ast.YieldFrom | ast.Await | ast.NamedExpr):
                raise NotHermetic(f"the contract's statement on line {sub.lineno} is not a plain expression")


def _is_contract_statement(resolver: _Resolver, node: ast.stmt) -> bool:
    if isinstance(node, ast.FunctionDef):
        return any(resolver.harness_call(d) == f"{_HARNESS}.define" for d in node.decorator_list)
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__contracts__" for t in targets):
            return True
        value = node.value
        return value is not None and any(
            resolver.harness_call(s) == f"{_HARNESS}.Contract" for s in _walk_import_time(value)
        )
    return False


def plan_contracts(tree: ast.Module, kernel_defs: set[str], rebound: set[str]) -> ContractPlan | None:
    """What the module's own contract statements need (None: the module defines no contract at
    its top level); ``NotHermetic`` when they cannot be taken from the text alone.
    ``kernel_defs``: the names the hermetic kernel build can make; ``rebound``: names bound
    more than once at the top."""
    resolver = _Resolver(tree, kernel_defs, rebound)
    roots = [i for i, n in enumerate(tree.body) if _is_contract_statement(resolver, n)]
    if not roots:
        return None
    _no_other_makers(resolver, set(roots))
    plan = ContractPlan()
    plan.future = [
        i for i, n in enumerate(tree.body) if isinstance(n, ast.ImportFrom) and n.module == "__future__"
    ]
    reached: set[str] = set()
    todo = list(roots)
    while todo:
        index = todo.pop()
        if index in plan.statements:
            continue
        plan.statements.add(index)
        node = tree.body[index]
        _check_statement(resolver, node)
        for name in sorted(free_names(node)):
            reached.add(name)
            found = _resolve(resolver, name, node, plan)
            if found is not None:
                todo.append(found)
    own = {name for i in plan.statements for name in _bindings(tree.body[i])}
    _left_out_code(resolver, plan, reached | own)
    return plan


def _no_other_makers(resolver: _Resolver, roots: set[int]) -> None:
    """A contract made anywhere else than a top-level contract statement (inside a function: a
    factory; through an alias of ``Contract``) is one the extraction would miss."""
    for i, node in enumerate(resolver.tree.body):
        if _is_main_guard(node) or _is_kernel_build(resolver, node):
            continue  # a kernel's or func's body is Warp code: no contract is made there
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Name | ast.Attribute) or not isinstance(sub.ctx, ast.Load):
                continue
            if resolver.dotted(sub) not in _MAKERS:
                continue
            if i in roots and not _inside_function(node, sub):
                continue
            raise NotHermetic(
                f"a contract is made or named on line {sub.lineno} outside a top-level `Contract(...)` or "
                "`@define` statement (inside a function, a factory, or through another name)"
            )


def _is_kernel_build(resolver: _Resolver, node: ast.stmt) -> bool:
    """Whether ``node`` is a statement the kernel build makes (a kernel, func, struct or constant)."""
    bound = set(_bindings(node))
    return (
        bool(bound)
        and bound <= resolver.kernel_defs
        and isinstance(node, ast.FunctionDef | ast.ClassDef | ast.Assign)
    )


def _inside_function(root: ast.stmt, target: ast.AST) -> bool:
    todo: list[tuple[ast.AST, bool]] = [(root, False)]
    while todo:
        node, inside = todo.pop()
        if node is target:
            return inside
        scoped = inside or (isinstance(node, _SCOPES) and node is not root)
        if isinstance(node, ast.FunctionDef) and node is root:
            for d in node.decorator_list:
                todo.append((d, False))
            todo.extend((b, True) for b in node.body)
            continue
        todo.extend((c, scoped) for c in ast.iter_child_nodes(node))
    return False


def _check_statement(resolver: _Resolver, node: ast.stmt) -> None:
    if isinstance(node, ast.FunctionDef):
        for d in node.decorator_list:
            if resolver.harness_call(d) != f"{_HARNESS}.define":
                raise NotHermetic(
                    f"the contract reaches `{node.name}`, decorated with `{ast.unparse(d)}` "
                    "(a decorator runs at import)"
                )
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not all(isinstance(t, ast.Name) for t in targets) or node.value is None:
            raise NotHermetic(
                f"the contract reaches the statement on line {node.lineno}, which is not `name = ...`"
            )
    else:
        raise NotHermetic(
            f"the contract reaches the statement on line {node.lineno} ({type(node).__name__.lower()}), "
            "which runs code at import"
        )
    _check_import_time(resolver, node)


def _resolve(resolver: _Resolver, name: str, user: ast.stmt, plan: ContractPlan) -> int | None:
    """The statement binding ``name`` that ``user`` needs executed (None: nothing to execute, or
    an import or a kernel build name, noted in ``plan``)."""
    if name in resolver.globals_declared:
        raise NotHermetic(
            f"the contract reads `{name}`, which function `{resolver.globals_declared[name]}` rebinds"
        )
    where = resolver.bound_at.get(name)
    if not where:
        if hasattr(builtins, name) or name in ("__name__", "__file__", "__doc__"):
            return None
        raise NotHermetic(
            f"the contract reads `{name}`, which the module's text never binds (bound at run time)"
        )
    if len(where) > 1 or name in resolver.rebound:
        raise NotHermetic(
            f"the contract reads `{name}`, which is bound more than once at the top of the module"
        )
    node = resolver.tree.body[where[0]]
    if isinstance(node, ast.Import | ast.ImportFrom):
        plan.imports[name] = _library_import(node, name)
        return None
    if name in resolver.kernel_defs:
        plan.kernel_names.add(name)
        return None
    if isinstance(node, ast.FunctionDef):
        return where[0]
    if isinstance(node, ast.Assign | ast.AnnAssign) and name in _bindings(node):
        return where[0]
    raise NotHermetic(
        f"the contract reads `{name}`, bound on line {node.lineno} by a {type(node).__name__.lower()} "
        "statement (code that runs at import)"
    )


def _library_import(node: ast.Import | ast.ImportFrom, name: str) -> tuple[str, str | None]:
    """(module, attribute or None) an allowed import binds ``name`` to; ``NotHermetic`` otherwise."""
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        alias = next(a for a in node.names if (a.asname or a.name) == name)
        if node.level or not _allowed_module(f"{module}.{alias.name}", module):
            raise NotHermetic(
                f"the contract reads `{name}`, imported from `{'.' * node.level}{module}` (not a library)"
            )
        return module, alias.name
    alias = next(a for a in node.names if (a.asname or a.name).split(".")[0] == name)
    if not _allowed_module(alias.name, alias.name):
        raise NotHermetic(f"the contract reads `{name}`, imported from `{alias.name}` (not a library)")
    return (alias.name, None) if alias.asname else (alias.name.split(".")[0], None)


def _allowed_module(full: str, module: str) -> bool:
    top = module.split(".")[0]
    if top == "warp_harness":
        return full == _HARNESS or full.startswith(_HARNESS + ".") or module == _HARNESS
    return top in _LIBRARIES or top in sys.stdlib_module_names


def _left_out_code(resolver: _Resolver, plan: ContractPlan, reached: set[str]) -> None:
    """Top-level code the extraction leaves out must not touch what the module's own statements
    that the contract reaches bind: on import it would run, and could change the contract (a
    default, a global, a function's attribute), so the text alone would not say what the contract
    is. (A library it changes, ``np.allclose = ...``, is no such case: left out, that code never
    runs, and the contract gets the library as it is.)"""
    for i, node in enumerate(resolver.tree.body):
        if i in plan.statements or _is_main_guard(node) or isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if _is_kernel_build(resolver, node):
            continue  # a kernel, func or constant the kernel build makes
        for part in import_time_nodes(node):
            for sub in _walk_import_time(part):
                if (
                    isinstance(sub, ast.Name)
                    and sub.id in reached
                    and sub.id in resolver.bound_at
                    and sub.id not in plan.imports
                    and sub.id not in resolver.kernel_defs
                ):
                    raise NotHermetic(
                        f"top-level code on line {getattr(sub, 'lineno', node.lineno)} uses `{sub.id}`, "
                        "which the contract reaches: it runs at import and could change the contract"
                    )
