"""Questions about launch sites and kernels that several rules ask (which kernel a launch
certainly runs, whether a launch is deferred or empty, which builtins a kernel reaches)."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from warp_harness.model.index import NodeIndex, around_body, body_index
from warp_harness.model.inference import ThreadIndices
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel
from warp_harness.model.thread_accesses import LaunchShapes, launch_shapes
from warp_harness.model.walk import walk
from warp_harness.record import Location
from warp_harness.rules.base import Fact, RuleContext

# how each binary operator is written, for messages and fixes
OPERATOR_TEXT: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.MatMult: "@",
}


def definition_location(ctx: RuleContext, kernel: KernelDef) -> Location:
    """The `def name(` of a kernel, not its whole body (in the file defining it)."""
    node = kernel.node
    model = kernel_model(ctx, kernel)
    line = node.lineno
    text = model.lines[line - 1] if 0 < line <= len(model.lines) else ""
    col = text.find("def ")
    col = max(col, 0)
    end = col + len("def ") + len(node.name) if text.find(node.name, col) >= 0 else col
    return Location(model.path, line, col, line, end, kernel.name)


def kernel_location(
    ctx: RuleContext, kernel: KernelDef, node: ast.AST, end_node: ast.AST | None = None
) -> Location:
    """Where ``node`` (inside ``kernel``) is, in the file defining the kernel (for `Related` entries)."""
    model = kernel_model(ctx, kernel)
    if model is ctx.model:
        return ctx.location(node, kernel.name, end_node)
    return replace(ctx, model=model).location(node, kernel.name, end_node)


def _rebound_names(ctx: RuleContext, scope: ast.AST) -> frozenset[str]:
    """Names that may be rebound in ``scope``: its own bindings and the module's (computed once per scope
    and analysis)."""
    ctx.require(Fact.SCOPES)

    def compute() -> frozenset[str]:
        names = _cached(ctx, ctx.model.tree, lambda: _module_names(ctx.model.tree))
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            names = names | _bound_in(scope)
        return names

    return _cached(ctx, scope, compute)


def _cached(ctx: RuleContext, node: ast.AST, compute: Callable[[], frozenset[str]]) -> frozenset[str]:
    """``ctx.rebound``'s entry for ``node``, made by ``compute`` the first time (the entry keeps the
    node, so its id cannot be reused meanwhile)."""
    cached = ctx.rebound.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    names = compute()
    ctx.rebound[id(node)] = (node, names)
    return names


def _module_names(tree: ast.Module) -> frozenset[str]:
    names: set[str] = set()
    for stmt in tree.body:
        # a module-level `k = something` next to the `def k` makes `k` ambiguous
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(n.id for t in targets for n in walk(t) if isinstance(n, ast.Name))
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name.split(".")[0] for alias in stmt.names)
    return frozenset(names)


def _bound_in(scope: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Parameters, and names stored, deleted or declared global/nonlocal anywhere in the function."""
    args = scope.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    names = {a.arg for a in every}
    # the body's index is shared (built with the module's); the rest of the function is small
    before, after = around_body(scope)
    for index in (body_index(scope), NodeIndex([*before, *after])):
        names.update(n.id for n in index.of(ast.Name) if isinstance(n.ctx, ast.Store | ast.Del))
        for global_ in index.of(ast.Global):
            names.update(global_.names)
        for nonlocal_ in index.of(ast.Nonlocal):
            names.update(nonlocal_.names)
    return frozenset(names)


def name_is_rebound(site: LaunchSite, ctx: RuleContext, name: str) -> bool:
    """True when ``name`` may not be the module's kernel at the launch (a parameter, a local, ...)."""
    return name in _rebound_names(ctx, site.scope)


def direct_launch_kernel(ctx: RuleContext, site: LaunchSite) -> KernelDef | None:
    """The kernel of this file a launch names by its plain, not rebound name, or None."""
    name = site.kernel_name
    kernel = ctx.model.kernel_named(name)
    if kernel is None or name is None or name_is_rebound(site, ctx, name):
        return None
    return kernel


def launch_kernel(ctx: RuleContext, site: LaunchSite) -> KernelDef | None:
    """The kernel a launch certainly refers to, or None: this file's kernel named by the launch, or, with
    the workspace model (``ctx.project``), one reached through imports, module attributes, globals,
    ``self.`` attributes or a kernel factory, in this file or another module."""
    kernel = direct_launch_kernel(ctx, site)
    if kernel is None and ctx.project is not None:
        return ctx.project.kernel_of(site)
    return kernel


def kernel_model(ctx: RuleContext, kernel: KernelDef) -> ModuleModel:
    """The model of the module that defines ``kernel``: ``ctx.model`` for this file's kernels; for a kernel
    a launch resolved into another module (the workspace model), that module's model. Use it for the
    kernel's types and constants (``kernel_model(ctx, k).types(k)``), never ``ctx.model`` directly."""
    if ctx.project is not None:
        model = ctx.project.model_of(kernel)
        if model is not None:
            return model
    return ctx.model


def launches_of(ctx: RuleContext, kernel: KernelDef) -> list[LaunchSite]:
    """The launch sites of ``kernel`` a kernel rule judges: in the engine's launch-side pass (see
    `Rule.foreign_launches`) the sites of this file launching ``kernel``, a kernel of another module or one
    reached indirectly; otherwise the sites of this file naming ``kernel`` (filter them with
    `launch_kernel`)."""
    focus = ctx.project.focus if ctx.project is not None else None
    if focus is not None:
        return list(focus)
    return ctx.model.launches_of(kernel)


def launched_elsewhere(ctx: RuleContext) -> bool:
    """True in the engine's launch-side pass: the kernel judged may live in another file, so records go
    at the launch site (`launches_of`) and point into the kernel with `kernel_location`, without fixes
    in the kernel."""
    return ctx.project is not None and ctx.project.focus is not None


def indirect_launches(ctx: RuleContext) -> list[tuple[int, list[LaunchSite], KernelDef]]:
    """Per kernel, (position in ``ctx.model.launches`` of its first site, its sites, the kernel) of the
    launches whose kernel the workspace model resolved but that do not name a kernel of this file directly
    (the engine's launch-side pass)."""
    if ctx.project is None:
        return []
    found: dict[int, tuple[int, list[LaunchSite], KernelDef]] = {}
    for position, site in enumerate(ctx.model.launches):
        if direct_launch_kernel(ctx, site) is not None:
            continue
        kernel = ctx.project.kernel_of(site)
        if kernel is not None:
            found.setdefault(id(kernel), (position, [], kernel))[1].append(site)
    return list(found.values())


def launch_arguments(site: LaunchSite) -> list[ast.expr] | None:
    """``inputs + outputs`` when both are literal (None otherwise, or when the call unpacks ``*``/``**``)."""
    call = site.node
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return None
    inputs = site.argument_list("inputs")
    outputs = site.argument_list("outputs")
    if inputs is None or outputs is None:
        return None
    return [*inputs, *outputs]


def uses_warp_builtin(ctx: RuleContext, kernel: KernelDef, names: set[str]) -> bool:
    """Whether ``kernel`` (or a ``@wp.func`` of its file it calls, transitively) calls one of ``names``."""
    model = kernel_model(ctx, kernel)
    funcs = model.funcs
    warp_name = model.imports.warp_name
    seen: set[str] = set()
    stack = [kernel]
    while stack:
        current = stack.pop()
        for node in _calls_in(current.node):
            warp = warp_name(node.func)
            if warp is not None and warp in names:
                return True
            func = node.func
            if isinstance(func, ast.Name) and func.id in funcs and func.id not in seen:
                seen.add(func.id)
                stack.append(funcs[func.id])
    return False


# per function node: every call in it, decorators and annotations included (kept while the node lives)
_CALLS: weakref.WeakKeyDictionary[ast.AST, list[ast.Call]] = weakref.WeakKeyDictionary()


def _calls_in(node: ast.AST) -> list[ast.Call]:
    calls = _CALLS.get(node)
    if calls is None:
        calls = _CALLS[node] = [n for n in walk(node) if isinstance(n, ast.Call)]
    return calls


def deferred_launch(site: LaunchSite) -> bool:
    """``record_cmd=True`` (or not literally False): the launch may run later, with other dims."""
    node: ast.expr | None = next((kw.value for kw in site.node.keywords if kw.arg == "record_cmd"), None)
    if node is None and len(site.node.args) > 10:
        node = site.node.args[10]
    if node is None:
        return False
    return not (isinstance(node, ast.Constant) and node.value in (False, None, 0))


def kernel_launch_shapes(ctx: RuleContext, kernel: KernelDef, tids: ThreadIndices) -> list[LaunchShapes]:
    """The shapes each launch of ``kernel`` passes (``thread_accesses.launch_shapes``), for the launches
    that run this kernel now and whose arguments resolve."""
    found = []
    for site in launches_of(ctx, kernel):
        if launch_kernel(ctx, site) is not kernel or deferred_launch(site):
            continue
        shapes = launch_shapes(site, kernel, tids, ctx.constants.values, ctx.imports)
        if shapes is not None:
            found.append(shapes)
    return found


def empty_launch(ctx: RuleContext, site: LaunchSite) -> bool:
    """``dim`` certainly has a zero extent: no thread runs."""
    node = site.dim
    if isinstance(node, ast.Name) and node.id in site.local_aliases:
        node = site.local_aliases[node.id]
    parts = list(node.elts) if isinstance(node, ast.Tuple | ast.List) else [node] if node is not None else []
    for part in parts:
        if isinstance(part, ast.Starred):
            continue
        value = site.fold(part, ctx.model.constants.values, ctx.model.imports)
        if value == 0 and not isinstance(value, bool):
            return True
    return False


def iter_statements(body: list[ast.stmt], skip: frozenset[int] = frozenset()) -> Iterator[ast.stmt]:
    """Every statement in ``body`` and in the blocks nested in it (cheaper than walking expressions),
    except those whose id is in ``skip`` and what is below them (``index.dropped_nodes(kernel.node)``:
    the branches Warp never compiles)."""
    stack = body[::-1]
    pop = stack.pop
    push_all = stack.extend
    blocks_of = _BLOCKS
    while stack:
        stmt = pop()
        if skip and id(stmt) in skip:
            continue
        yield stmt
        kind = type(stmt)
        blocks = blocks_of.get(kind)
        if blocks is None:
            blocks = blocks_of[kind] = _block_fields(kind)
        if not blocks:
            continue
        fields, handlers = blocks
        for field in fields:
            block = getattr(stmt, field)
            if block:
                push_all(block[::-1])
        if handlers:
            for handler in stmt.handlers:  # type: ignore[attr-defined]
                push_all(handler.body[::-1])


# per statement class: its statement blocks among orelse, finalbody, body (the order `iter_statements` has
# always pushed them in), and whether it has exception handlers; () for a simple statement
_BLOCKS: dict[type[ast.stmt], tuple[tuple[str, ...], bool] | tuple[()]] = {}


def _block_fields(kind: type[ast.stmt]) -> tuple[tuple[str, ...], bool] | tuple[()]:
    fields = tuple(f for f in ("orelse", "finalbody", "body") if f in kind._fields)
    handlers = "handlers" in kind._fields
    return (fields, handlers) if fields or handlers else ()


def derived_names(kernel: KernelDef, seed: str) -> set[str]:
    """``seed`` and every local computed (directly or not) from it."""
    edges = _assignment_edges(kernel.node)
    tainted = {seed}
    changed = True
    while changed:
        changed = False
        for sources, stored in edges:
            if not stored <= tainted and not sources.isdisjoint(tainted):
                tainted |= stored
                changed = True
    return tainted


# per kernel node: (the body index read, its (names read, names stored) per assignment)
_EDGES: weakref.WeakKeyDictionary[ast.AST, tuple[NodeIndex, list[tuple[set[str], set[str]]]]] = (
    weakref.WeakKeyDictionary()
)


def _assignment_edges(node: ast.AST) -> list[tuple[set[str], set[str]]]:
    """(names read, names stored) of every assignment, loop and walrus of the body Warp compiles (made
    again when `body_index` changes: a constant decides another branch)."""
    index = body_index(node)
    cached = _EDGES.get(node)
    if cached is not None and cached[0] is index:
        return cached[1]
    pairs: list[tuple[ast.expr, list[ast.expr]]] = [(n.value, n.targets) for n in index.of(ast.Assign)]
    augmented: list[ast.AugAssign | ast.AnnAssign] = [*index.of(ast.AugAssign), *index.of(ast.AnnAssign)]
    for aug in augmented:
        if aug.value is not None:
            pairs.append((aug.value, [aug.target]))
    pairs += [(loop.iter, [loop.target]) for loop in index.of(ast.For)]
    pairs += [(named.value, [named.target]) for named in index.of(ast.NamedExpr)]
    edges: list[tuple[set[str], set[str]]] = []
    for value, targets in pairs:
        sources = {n.id for n in walk(value) if isinstance(n, ast.Name)}
        stored = {
            n.id for t in targets for n in walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        if sources and stored:
            edges.append((sources, stored))
    _EDGES[node] = (index, edges)
    return edges


def mentions(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in walk(node))


@dataclass(frozen=True)
class CompareStore:
    """``if v < a[k]: a[k] = v``: a store of the compared value into the compared element (a
    minimum; a maximum for ``>``), the shape WH010 and WH058 report as racy when threads share it."""

    store: ast.Assign
    target: ast.Subscript
    value: ast.expr
    operation: str  # "min" or "max"


def _same_element(a: ast.AST, b: ast.AST) -> bool:
    """The same expression whether read or stored (``ast.dump`` tells the contexts apart)."""
    if isinstance(a, ast.Subscript) and isinstance(b, ast.Subscript):
        return ast.dump(a.value) == ast.dump(b.value) and ast.dump(a.slice) == ast.dump(b.slice)
    return ast.dump(a) == ast.dump(b)


def compare_then_store(stmt: ast.If) -> CompareStore | None:
    """The first store in ``stmt``'s body of the value its test compares an element with, into that
    element (any order of the comparison); None when there is none."""
    test = stmt.test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    op = test.ops[0]
    if not isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE):
        return None
    greater = isinstance(op, ast.Gt | ast.GtE)
    left, right = test.left, test.comparators[0]
    for store in stmt.body:
        if not isinstance(store, ast.Assign) or len(store.targets) != 1:
            continue
        target = store.targets[0]
        if not isinstance(target, ast.Subscript):
            continue
        # v > a[k] stores a maximum; a[k] > v a minimum
        for element, value, maximum in ((right, left, greater), (left, right, not greater)):
            if (
                isinstance(element, ast.Subscript)
                and _same_element(element, target)
                and _same_element(store.value, value)
            ):
                return CompareStore(store, target, value, "max" if maximum else "min")
    return None
