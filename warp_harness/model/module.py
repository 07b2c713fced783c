"""The static model of one source file: everything the rules read, built once per analysis."""

from __future__ import annotations

import ast
import bisect
import weakref
from dataclasses import dataclass, field, replace

from warp_harness.model.annotations import AnnotationResolver
from warp_harness.model.constants import ModuleConstants, Value
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import NodeIndex, _block_fields, set_compiled
from warp_harness.model.inference import Inference, KernelTypes, NoReturnTypes, ReturnTypes
from warp_harness.model.kernel import (
    KernelDef,
    KernelKind,
    Param,
    StructDef,
    find_kernel_nodes,
    find_structs,
    kernel_decorator,
)
from warp_harness.model.launches import LaunchSite, find_launches, launch_candidates, may_name_launch
from warp_harness.model.source import ParsedSource, parse_source
from warp_harness.model.static_branches import closure_values, compiled_view, is_abstract_body
from warp_harness.model.types import UNKNOWN, UnknownType, WarpType


@dataclass
class ModuleModel:
    """Everything the rules read about one file: its parse, imports, kernels, funcs, structs and launches."""

    path: str
    source: ParsedSource
    imports: ImportMap
    constants: ModuleConstants
    structs: dict[str, StructDef]
    type_aliases: dict[str, WarpType]
    resolver: AnnotationResolver
    kernels: list[KernelDef]
    launches: list[LaunchSite]
    builtins: ReturnTypes
    # every node of the file, walked once, when first asked for other than statements (rules ask
    # `model.index.of(ast.Call)`; see `build_model`)
    index: NodeIndex
    _types: dict[int, KernelTypes] = field(default_factory=dict)
    # every kernel and launch of the file when `kernels` / `launches` list only those to check
    # (see `restricted`); lookups by name always see the whole file
    _all_kernels: list[KernelDef] | None = None
    _all_launches: list[LaunchSite] | None = None
    # lookups over `all_kernels`, built on first use (not copied by `restricted`: `replace` resets them)
    _funcs: dict[str, KernelDef] | None = field(default=None, init=False, repr=False, compare=False)
    _kernels_by_name: dict[str, list[KernelDef]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _launches_by_name: dict[str | None, list[LaunchSite]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _overloaded_funcs: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)
    # what the parameters' types and the launch sites' folded values depend on (see `build_model`)
    derived_key: tuple[object, ...] = field(default=(), repr=False, compare=False)

    def restricted(
        self, kernels: list[KernelDef], launches: list[LaunchSite], index: NodeIndex | None = None
    ) -> ModuleModel:
        """This model with the rules' iteration limited to ``kernels`` and ``launches`` (type inference
        shared); other questions (``funcs``, ``kernel_named``, ``launches_of``) are about the whole file.
        ``index``: the nodes module-wide scans see, when the caller knows the others hold nothing they
        look for."""
        restricted = replace(
            self,
            kernels=kernels,
            launches=launches,
            index=index or self.index,
            _all_kernels=self.all_kernels,
            _all_launches=self.all_launches,
        )
        # the lookups over the whole file are the same: built once, on this model, and shared
        restricted._funcs = self.funcs
        restricted._overloaded_funcs = self.overloaded_funcs
        restricted._kernels_by_name = self._kernel_lists()
        restricted._launches_by_name = self._launch_lists()
        return restricted

    @property
    def all_kernels(self) -> list[KernelDef]:
        return self.kernels if self._all_kernels is None else self._all_kernels

    @property
    def all_launches(self) -> list[LaunchSite]:
        return self.launches if self._all_launches is None else self._all_launches

    @property
    def tree(self) -> ast.Module:
        return self.source.tree

    @property
    def lines(self) -> list[str]:
        return self.source.lines

    @property
    def funcs(self) -> dict[str, KernelDef]:
        if self._funcs is None:
            self._funcs = {k.name: k for k in self.all_kernels if k.kind == "func"}
        return self._funcs

    @property
    def overloaded_funcs(self) -> frozenset[str]:
        """Names of the @wp.func defined more than once in the file (`funcs` keeps the last): overloads Warp
        picks among by argument types, or variants made by different factories."""
        if self._overloaded_funcs is None:
            seen: set[str] = set()
            twice: set[str] = set()
            for k in self.all_kernels:
                if k.kind == "func":
                    (twice if k.name in seen else seen).add(k.name)
            self._overloaded_funcs = frozenset(twice)
        return self._overloaded_funcs

    def _kernel_lists(self) -> dict[str, list[KernelDef]]:
        if self._kernels_by_name is None:
            by_name: dict[str, list[KernelDef]] = {}
            for k in self.all_kernels:
                if k.is_kernel:
                    by_name.setdefault(k.name, []).append(k)
            self._kernels_by_name = by_name
        return self._kernels_by_name

    def _launch_lists(self) -> dict[str | None, list[LaunchSite]]:
        if self._launches_by_name is None:
            by_name: dict[str | None, list[LaunchSite]] = {}
            for site in self.all_launches:
                by_name.setdefault(site.kernel_name, []).append(site)
            self._launches_by_name = by_name
        return self._launches_by_name

    def kernel_named(self, name: str | None) -> KernelDef | None:
        """The single @wp.kernel of that name in this file (None when absent or ambiguous)."""
        if name is None:
            return None
        matches = self._kernel_lists().get(name, [])
        return matches[0] if len(matches) == 1 else None

    def launches_of(self, kernel: KernelDef) -> list[LaunchSite]:
        if self.kernel_named(kernel.name) is not kernel:
            return []
        return list(self._launch_lists().get(kernel.name, []))

    def types(self, kernel: KernelDef) -> KernelTypes:
        key = id(kernel.node)
        if key not in self._types:
            self._types[key] = Inference(
                kernel,
                self.imports,
                self.constants.values,
                self.resolver,
                self.structs,
                self.builtins,
                self.funcs,
                self.overloaded_funcs,
            ).run()
        return self._types[key]


def _type_aliases(tree: ast.Module, resolver: AnnotationResolver) -> dict[str, WarpType]:
    aliases: dict[str, WarpType] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            resolved = resolver.resolve(stmt.value)
            if not isinstance(resolved, UnknownType):
                aliases[stmt.targets[0].id] = resolved
    return aliases


# per function node (kept while it lives: the incremental analysis reuses unchanged nodes)
_PARAMS: weakref.WeakKeyDictionary[ast.FunctionDef, tuple[object, list[Param]]] = weakref.WeakKeyDictionary()


def _params(node: ast.FunctionDef, resolver: AnnotationResolver, key: object) -> list[Param]:
    cached = _PARAMS.get(node)
    if cached is not None and cached[0] == key:
        return list(cached[1])
    all_args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    params = [
        Param(a.arg, a.annotation, resolver.resolve(a.annotation) if a.annotation else UNKNOWN, a)
        for a in all_args
    ]
    _PARAMS[node] = (key, params)
    return list(params)


def _mark_compiled(
    kernel: KernelDef,
    enclosing: list[ast.FunctionDef],
    constants: dict[str, Value],
    imports: ImportMap,
) -> None:
    """Say what of ``kernel``'s body Warp compiles (`static_branches`): its flags, and the view the rules'
    `body_index` gives of it (set for this model each time, since a constant's value may have changed)."""
    abstract = kernel.kind == "func" and is_abstract_body(kernel.node)
    env = closure_values(enclosing, constants, imports) if enclosing else constants
    view = compiled_view(kernel.node, env, imports, abstract)
    set_compiled(
        kernel.node, view.hidden if view is not None else None, view.dropped if view is not None else None
    )
    if view is not None:
        kernel.abstract = view.abstract
        kernel.static_branches = view.branches


def _enclosing_functions(tree: ast.Module, wanted: list[ast.FunctionDef]) -> dict[int, list[ast.FunctionDef]]:
    """For each of the ``wanted`` functions (nested ones), the functions around it, outermost first: found
    down the statement lists (a function is never inside an expression), into the statements whose lines
    hold one of them."""
    found: dict[int, list[ast.FunctionDef]] = {}
    if not wanted:
        return found
    ids = {id(node) for node in wanted}
    lines = sorted({node.lineno for node in wanted})
    stack: list[tuple[ast.AST, tuple[ast.FunctionDef, ...]]] = [(stmt, ()) for stmt in tree.body]
    while stack:
        node, outer = stack.pop()
        if id(node) in ids:
            found[id(node)] = list(outer)
        if type(node) is ast.FunctionDef:
            outer = (*outer, node)
        for name in _block_fields(type(node)):
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend((child, outer) for child in value if _holds_a_line(child, lines))
    return found


def _holds_a_line(node: ast.AST, lines: list[int]) -> bool:
    """Whether ``node``'s lines hold one of ``lines`` (sorted); a node without lines (a match case) may."""
    first = getattr(node, "lineno", None)
    if first is None:
        return True
    last = getattr(node, "end_lineno", None) or first
    i = bisect.bisect_left(lines, first)
    return i < len(lines) and lines[i] <= last


def build_model(
    text: str,
    path: str = "<memory>",
    builtins: ReturnTypes | None = None,
    parsed: ParsedSource | None = None,
    index: NodeIndex | None = None,
) -> ModuleModel:
    """``index``, when given, must be the index of ``parsed.tree`` (built from cached parts)."""
    source = parsed or parse_source(text)
    tree = source.tree
    # a launch calls Warp's ``launch`` or ``launch_tiled`` under a name that spells it somewhere
    # (``wp.launch``, ``from warp import launch as go``): most files that use Warp launch nothing
    launching = may_name_launch(source.text)
    # the model reads statements (imports, classes, functions) and the calls on the lines that name a launch;
    # the walk of every node waits for the first rule that asks (a file without kernels and launches has none)
    index = index or NodeIndex.deferred(tree)
    imports = ImportMap.from_tree(tree, index)
    constants = ModuleConstants.from_tree(tree, imports, index.of(ast.Global))
    structs = find_structs(tree, imports, index)
    resolver = AnnotationResolver(imports, set(structs), {}, constants.values)
    aliases = _type_aliases(tree, resolver)
    resolver.aliases = aliases
    # what the parameters' types and the launch sites' folded values depend on
    key = (
        tuple(imports.modules.items()),
        tuple(imports.objects.items()),
        tuple(structs),
        tuple(aliases.items()),
        tuple(constants.values.items()),
    )
    kernels: list[KernelDef] = []
    found = find_kernel_nodes(tree, imports, index)
    top = {id(stmt) for stmt in tree.body}
    enclosing = _enclosing_functions(tree, [n for n, _, _ in found if id(n) not in top])
    for node, kind, options in found:
        kernels.append(
            _kernel_def(node, kind, options, resolver, key, enclosing.get(id(node), []), constants, imports)
        )
    launches: list[LaunchSite] = []
    if launching:
        calls = launch_candidates(source.text, tree, imports) if source.syntax_error is None else None
        launches = find_launches(tree, imports, constants.values, index, key, calls)
    return ModuleModel(
        path,
        source,
        imports,
        constants,
        structs,
        aliases,
        resolver,
        kernels,
        launches,
        builtins or NoReturnTypes(),
        index,
        derived_key=key,
    )


def _kernel_def(
    node: ast.FunctionDef,
    kind: KernelKind,
    options: dict[str, ast.expr],
    resolver: AnnotationResolver,
    key: object,
    enclosing: list[ast.FunctionDef],
    constants: ModuleConstants,
    imports: ImportMap,
) -> KernelDef:
    kernel = KernelDef(node.name, kind, node, _params(node, resolver, key), options, node.returns)
    _mark_compiled(kernel, enclosing, constants.values, imports)
    return kernel


def with_kernel_replaced(
    model: ModuleModel, position: int, node: ast.FunctionDef, source: ParsedSource, index: NodeIndex
) -> ModuleModel | None:
    """The model `build_model` makes of ``source``, where ``source`` is ``model``'s source with only the
    top-level Warp function at ``model.kernels[position]`` replaced by ``node`` (same line and name), which
    feeds none of what the rest of the model is derived from (imports, constants, classes, other functions,
    launches: `rules.base.Fact`); ``index``: the index of ``source.tree``. None: ``node`` is not a
    Warp function (the caller builds the model afresh)."""
    found = kernel_decorator(node, model.imports)
    if found is None or model._all_kernels is not None:
        return None
    kind, options = found
    kernel = _kernel_def(
        node, kind, options, model.resolver, model.derived_key, [], model.constants, model.imports
    )
    kernels = list(model.kernels)
    kernels[position] = kernel
    spliced = replace(model, source=source, kernels=kernels, index=index, _types={})
    old = model.kernels[position]
    if kind == "kernel" and old.kind == "kernel" and old.name == kernel.name:
        # the lookups by name over the whole file, with the one kernel of that name replaced
        spliced._funcs = model._funcs
        spliced._overloaded_funcs = model._overloaded_funcs
        spliced._launches_by_name = model._launches_by_name
        by_name = model._kernels_by_name
        if by_name is not None:
            by_name = dict(by_name)
            by_name[kernel.name] = [kernel if k is old else k for k in by_name[kernel.name]]
            spliced._kernels_by_name = by_name
    return spliced
