"""The workspace model: which kernel a ``wp.launch`` runs when the kernel is not a plain name defined in
the launching file.

A `ProjectIndex` knows every Python module of the checked tree and of its enclosing package (module
names come from a file's path relative to the nearest folder without an ``__init__.py``, the package
root) and keeps, per module, a small `ModuleSummary` built from its syntax tree on first use: top-level
kernels, kernel factories (functions returning one nested ``@wp.kernel``, behind any decorator such as
``functools.cache`` or a project's own caching decorator), imports (relative ones resolved against the
module's package), star imports, module-level single assignments (globals bound to kernels) and, per
class, ``self.x = ...`` / class-body ``x = ...`` attributes, bases and factory methods.

A launch's kernel expression is resolved through them: ``from .kernels import k``, ``from pkg import
kernels as K`` + ``K.k``, ``import pkg.kernels`` + ``pkg.kernels.k``, re-exports in ``__init__.py``,
module globals (``k = make_kernel(float)``), ``self.`` attributes (also through base classes), factory
calls (``make_kernel(...)``, also through a local ``k = make_kernel(...)``) and kernels nested in the
launching function. Anything else, or anything ambiguous (a name bound twice, a factory returning one
of several kernels, a parameter), resolves to None: the launch rules then stay silent.

A `ProjectView` is the index seen from one file under analysis (`RuleContext.project`): it resolves that
file's launches against its current text, returns the model of the module defining a kernel, records
every module it consulted (`ProjectView.deps`: the result cache keys a file's records with them) and,
for the engine's launch-side pass, the launch site a kernel rule is being asked about (`focus`).
"""

from __future__ import annotations

import ast
import os
from collections import Counter, OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from warp_harness.digests import blake2b
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import NodeIndex, full_body_index
from warp_harness.model.kernel import KernelDef, warp_decorator
from warp_harness.model.launches import LaunchSite
from warp_harness.model.module import ModuleModel, build_model
from warp_harness.model.source import (
    NotInPieces,
    ParsedSource,
    Piece,
    decode_source,
    parse_in_pieces,
    top_level_pieces,
)
from warp_harness.workspace import IGNORED_DIRS, iter_python_files

if TYPE_CHECKING:
    from warp_harness.model.inference import ReturnTypes

# how deep a chain of names, imports and attributes is followed
MAX_DEPTH = 24
# models of other modules kept per process (a kernel module is built once per analysis run otherwise),
# at most this many and, beyond the newest one, at most this much source text: a model and its syntax
# tree take ~60x their source in memory (700 kB: ~40 MB). Over newton, the modules one file launches into
# add up to 575 kB at most (its 1 MB steel solver), and this budget rebuilds no more models than twice
# as much did
MODEL_CACHE_SIZE = 8
MODEL_CACHE_BYTES = 700_000
# parsed modules kept per process (their syntax trees are the bulk of the memory), bounded the same way
LOADED_CACHE_SIZE = 16
LOADED_CACHE_BYTES = 700_000
# module summaries kept per process: detached from the trees (~0.4x their source in memory), so many more,
# and a module is parsed for its summary once while its text stays the same (over newton a process
# summarises ~60 modules, 4 MB of source)
SUMMARY_CACHE_SIZE = 2048
SUMMARY_CACHE_BYTES = 16_000_000
# a file larger than this is not summarised (the engine does not check it either)
MAX_INDEXED_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class KernelRef:
    """A ``@wp.kernel`` definition: its module and the position of its ``def``."""

    module: str
    line: int
    col: int
    name: str


# what an expression denotes, as far as kernels are concerned
@dataclass(frozen=True)
class _Module:
    """A module (what an expression may denote)."""

    name: str


@dataclass(frozen=True)
class _Kernel:
    """A kernel (what an expression may denote)."""

    ref: KernelRef
    via_factory: bool = False


@dataclass(frozen=True)
class _Factory:
    """A kernel factory (what an expression may denote)."""

    ref: KernelRef


@dataclass(frozen=True)
class _Class:
    """A class of a module (what an expression may denote)."""

    module: str
    name: str


_Value = _Module | _Kernel | _Factory | _Class

# a name's binding in a namespace: ("expr", value node, function it is evaluated in or None),
# ("import", module, attribute or None), ("kernel", ref), ("factory", ref), ("class", name), ("other",)
_Binding = tuple[object, ...]


@dataclass(eq=False)
class _Scope:
    """A method of a detached class summary, in place of its node: its ``self`` parameter and the bindings
    (pruned, see `_prune`) of the names the attribute values it assigns can lead to."""

    self_name: str | None
    bindings: dict[str, list[_Binding]]


_Function = ast.FunctionDef | ast.AsyncFunctionDef
# what a class attribute's value is evaluated in: the method assigning it (a node, or a `_Scope` in a
# detached summary), None for the class body
_Method = _Function | _Scope | None

# stand-ins for what the evaluator does not look into (pruned values share them)
_NONE = ast.Constant(value=None)
_OPAQUE = ast.Constant(value=Ellipsis)


def _prune(node: ast.expr | None) -> ast.expr:
    """A copy of the parts of ``node`` `ProjectView._eval` reads (names, attributes, a call's callee, a
    conditional's branches, a ``None``), the rest an opaque constant: a summary keeping it keeps no subtree
    of its module's syntax tree."""
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id)
    if isinstance(node, ast.Attribute):
        return ast.Attribute(value=_prune(node.value), attr=node.attr)
    if isinstance(node, ast.Call):
        return ast.Call(func=_prune(node.func), args=[], keywords=[])
    if isinstance(node, ast.IfExp):
        return ast.IfExp(test=_OPAQUE, body=_prune(node.body), orelse=_prune(node.orelse))
    if isinstance(node, ast.Constant) and node.value is None:
        return _NONE
    return _OPAQUE


def _names_in(node: ast.expr) -> Iterator[str]:
    return (sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name))


@dataclass
class _ClassSummary:
    """What resolution reads of a class: its bases, attribute assignments and kernel factories."""

    name: str
    bases: list[ast.expr]
    # attribute -> its assignments: (value, the method assigning it, None for the class body)
    attrs: dict[str, list[tuple[ast.expr | KernelRef, _Method]]]
    # the methods' nodes (None in a detached summary: their factories are worked out already)
    methods: dict[str, _Function | None]
    imports: ImportMap
    module: str
    _factories: dict[str, KernelRef | None] = field(default_factory=dict, repr=False)

    def factory(self, method: str) -> KernelRef | None:
        """The kernel the method returns when it is a kernel factory (worked out on first use)."""
        if method not in self._factories:
            node = self.methods.get(method)
            self._factories[method] = _factory_kernel(node, self.imports, self.module) if node else None
        return self._factories[method]


@dataclass
class ModuleSummary:
    """What a module exposes that can lead to a kernel (see the module docstring).

    A detached summary (`summarise` with ``detached``, what `ProjectIndex` keeps) holds no node of its
    module's syntax tree: values are pruned (`_prune`), functions stand as the kernel or factory they
    define, classes are summarised at once, so it outlives the tree and is valid while ``digest`` is the
    module's. The summary of the file under analysis (`ProjectView`) works on that file's tree lazily.
    """

    name: str
    package: bool
    digest: str
    # module-level names: every binding found (more than one: ambiguous)
    names: dict[str, list[_Binding]]
    stars: list[str]
    classes: dict[str, ast.ClassDef]
    # the module-level imports (enough to recognise Warp's decorators)
    imports: ImportMap
    # worked out on first use: class summaries, and which functions are kernel factories
    _classes: dict[str, _ClassSummary] = field(default_factory=dict, repr=False)
    _factories: dict[int, tuple[ast.AST, KernelRef | None]] = field(default_factory=dict, repr=False)

    def class_summary(self, name: str) -> _ClassSummary | None:
        info = self._classes.get(name)
        if info is None:
            node = self.classes.get(name)
            if node is None:
                return None
            info = self._classes[name] = _summarise_class(node, self.imports, self.name)
        return info

    def factory(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> KernelRef | None:
        """The kernel ``fn`` (a function of this module) returns when it is a kernel factory."""
        cached = self._factories.get(id(fn))
        if cached is not None and cached[0] is fn:
            return cached[1]
        ref = _factory_kernel(fn, self.imports, self.name)
        self._factories[id(fn)] = (fn, ref)
        return ref


def _is_warp_kernel(node: ast.FunctionDef | ast.AsyncFunctionDef, imports: ImportMap) -> bool:
    return any(warp_decorator(d, imports)[0] == "kernel" for d in node.decorator_list)


def _is_warp_function(node: ast.FunctionDef | ast.AsyncFunctionDef, imports: ImportMap) -> bool:
    return any(warp_decorator(d, imports)[0] is not None for d in node.decorator_list)


def _factory_kernel(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, imports: ImportMap, module: str
) -> KernelRef | None:
    """The nested ``@wp.kernel`` ``fn`` returns: every ``return`` of ``fn`` itself returns it, or a value
    looked up in a cache (``return cache[key]``, ``return found`` after ``found = cache.get(key)``)."""
    if _is_warp_function(fn, imports):
        return None
    index = full_body_index(fn)
    nested: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *index.of(ast.FunctionDef),
        *index.of(ast.AsyncFunctionDef),
    ]
    if not nested:
        return None
    spans = [(n.lineno, n.end_lineno or n.lineno) for n in nested]
    defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in nested:
        defs.setdefault(node.name, []).append(node)
    stores: Counter[str] = Counter()
    lookups: set[str] = set()  # names bound once to a cache lookup
    for assign in index.of(ast.Assign):
        for target in assign.targets:
            if isinstance(target, ast.Name):
                stores[target.id] += 1
                if _cache_lookup(assign.value):
                    lookups.add(target.id)
    returned: set[str] = set()
    for ret in index.of(ast.Return):
        if any(first < ret.lineno <= last for first, last in spans):
            continue  # a return of a nested function
        value = ret.value
        if isinstance(value, ast.Name) and value.id in defs:
            returned.add(value.id)
        elif not (_cache_lookup(value) or (isinstance(value, ast.Name) and value.id in lookups)):
            return None
    if len(returned) != 1:
        return None
    (name,) = returned
    found = defs[name]
    if len(found) != 1 or not _is_warp_kernel(found[0], imports) or stores[name]:
        return None
    node = found[0]
    return KernelRef(module, node.lineno, node.col_offset, node.name)


def _cache_lookup(value: ast.expr | None) -> bool:
    """``cache[key]``, ``cache.get(key)``: a kernel built earlier by the same factory."""
    if isinstance(value, ast.Subscript):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get"


def _top_statements(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, also those in top-level ``if`` / ``try`` / ``with`` blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody"):
                yield from _top_statements(getattr(stmt, block, []) or [])
            for handler in getattr(stmt, "handlers", []) or []:
                yield from _top_statements(handler.body)


def resolve_relative(module: str, package: bool, level: int, target: str | None) -> str | None:
    """The absolute module ``from <level dots><target> import ...`` names inside ``module``."""
    if level == 0:
        return target
    parts = module.split(".") if module else []
    if not package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    if target:
        parts = [*parts, *target.split(".")]
    return ".".join(parts) or None


def _import_bindings(
    node: ast.Import | ast.ImportFrom, module: str, package: bool
) -> Iterator[tuple[str, _Binding]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, ("import", alias.name, None)
            else:
                top = alias.name.split(".")[0]
                yield top, ("import", top, None)
        return
    base = resolve_relative(module, package, node.level, node.module)
    for alias in node.names:
        if alias.name == "*":
            continue
        yield alias.asname or alias.name, ("import", base, alias.name) if base else ("other",)


def _stored_targets(node: ast.AST) -> Iterator[str]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    elif isinstance(node, ast.For | ast.AsyncFor):
        targets = [node.target]
    elif isinstance(node, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                yield sub.id


def summarise(
    tree: ast.Module, module: str, package: bool, digest: str = "", *, detached: bool = False
) -> ModuleSummary:
    """A module's summary from its syntax tree (cheap: module-level statements and class bodies; a
    detached one, see `ModuleSummary`, also looks into functions for kernel factories)."""
    top = list(_top_statements(tree.body))
    imports = _import_map([s for s in top if isinstance(s, ast.Import | ast.ImportFrom)], tree)
    names: dict[str, list[_Binding]] = {}
    stars: list[str] = []
    classes: dict[str, ast.ClassDef] = {}
    _summarise_statements(top, imports, module, package, detached, names, stars, classes)
    summary = ModuleSummary(module, package, digest, names, stars, classes, imports)
    if detached:
        summary.imports = imports.without_answers()  # (decorators' answers)
        for name, node in classes.items():
            info = summary._classes[name] = _summarise_class(node, imports, module, package, detached=True)
            info.imports = summary.imports
        summary.classes = {}
    return summary


def summarise_pieces(
    pieces: Iterable[Piece], module: str, package: bool, digest: str = ""
) -> ModuleSummary | None:
    """`summarise` (detached) of the module whose top-level statements come in ``pieces`` (in order, as
    `source.top_level_pieces` yields them), each piece dropped once summarised: the module's whole tree is
    never held. Definitions are judged with the imports of their piece and those before it; None when a
    later piece's imports change that map (`summarise` judges with all of the module's), the summary
    being then the whole tree's to make."""
    names: dict[str, list[_Binding]] = {}
    stars: list[str] = []
    summaries: dict[str, _ClassSummary] = {}
    seen: list[ast.Import | ast.ImportFrom] = []
    imports = ImportMap()
    judged = False  # whether a definition was judged with the imports so far
    open_class: _ClassSummary | None = None  # the class ending the piece before, summarised so far
    for statements, continues in pieces:
        if continues:  # more of that class's body
            assert open_class is not None
            part = ast.ClassDef(
                name=open_class.name, bases=[], keywords=[], body=statements, decorator_list=[]
            )
            del statements
            _merge_class(open_class, _summarise_class(part, imports, module, package, detached=True))
            del part
            continue
        last = statements[-1] if statements else None
        top = list(_top_statements(statements))
        del statements
        new = [s for s in top if isinstance(s, ast.Import | ast.ImportFrom)]
        if new:
            seen.extend(new)
            grown = _import_map(seen)
            if judged and grown != imports:  # (their modules and objects)
                return None
            imports = grown
        else:  # without the answers cached per node of the pieces before
            imports = imports.without_answers()
        classes: dict[str, ast.ClassDef] = {}
        _summarise_statements(top, imports, module, package, True, names, stars, classes)
        for name, node in classes.items():
            summaries[name] = _summarise_class(node, imports, module, package, detached=True)
        judged = judged or any(isinstance(s, _Function | ast.ClassDef) for s in top)
        open_class = summaries[last.name] if isinstance(last, ast.ClassDef) else None
        del top, classes, last
    summary = ModuleSummary(module, package, digest, names, stars, {}, imports.without_answers())
    summary._classes = summaries
    for info in summaries.values():
        info.imports = summary.imports
    return summary


def _merge_class(info: _ClassSummary, part: _ClassSummary) -> None:
    """Add to a detached class summary that of more of the class's body (`_summarise_class` of the whole
    class: assignments in order, a method defined again standing for its last definition)."""
    for name, assignments in part.attrs.items():
        info.attrs.setdefault(name, []).extend(assignments)
    for name in part.methods:
        info.methods[name] = None
    info._factories.update(part._factories)


def _import_map(statements: list[ast.Import | ast.ImportFrom], tree: ast.Module | None = None) -> ImportMap:
    """The import map of a module whose top-level imports are ``statements`` (in order)."""
    return ImportMap.from_tree(tree or ast.Module(body=[], type_ignores=[]), NodeIndex(statements))


def _summarise_statements(
    top: list[ast.stmt],
    imports: ImportMap,
    module: str,
    package: bool,
    detached: bool,
    names: dict[str, list[_Binding]],
    stars: list[str],
    classes: dict[str, ast.ClassDef],
) -> None:
    """`summarise`'s pass over module-level statements: their bindings into ``names``, the modules they
    star-import into ``stars`` and their classes into ``classes``."""

    def bind(name: str, binding: _Binding) -> None:
        names.setdefault(name, []).append(binding)

    for stmt in top:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            if _is_warp_kernel(stmt, imports):
                bind(stmt.name, ("kernel", KernelRef(module, stmt.lineno, stmt.col_offset, stmt.name)))
            elif detached:
                bind(stmt.name, _def_binding(stmt, imports, module))
            else:
                bind(stmt.name, ("def", stmt))  # a kernel factory? (`ModuleSummary.factory`, when asked)
        elif isinstance(stmt, ast.ClassDef):
            classes[stmt.name] = stmt
            bind(stmt.name, ("class", stmt.name))
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                base = resolve_relative(module, package, stmt.level, stmt.module)
                if base:
                    stars.append(base)
            for name, binding in _import_bindings(stmt, module, package):
                bind(name, binding)
        elif (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            bind(stmt.targets[0].id, ("expr", _prune(stmt.value) if detached else stmt.value, None))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            bind(stmt.target.id, ("expr", _prune(stmt.value) if detached else stmt.value, None))
        else:
            for name in _stored_targets(stmt):
                bind(name, ("other",))


def _def_binding(fn: _Function, imports: ImportMap, module: str) -> _Binding:
    """A ``def``'s binding as `ProjectView._binding` would take it: the kernel it defines, the kernel it
    is a factory of, or nothing."""
    if _is_warp_kernel(fn, imports):
        return ("kernel", KernelRef(module, fn.lineno, fn.col_offset, fn.name))
    ref = _factory_kernel(fn, imports, module)
    return ("factory", ref) if ref is not None else ("other",)


def _scope(fn: _Function, values: list[ast.expr], imports: ImportMap, module: str, package: bool) -> _Scope:
    """``fn``'s stand-in in a detached class summary, ``values`` (pruned) being what it assigns to
    attributes: the bindings of every name evaluating them can reach, pruned."""
    every = _function_bindings(fn, module, package)
    scope = _Scope(_self_name(fn), {})
    pending = [name for value in values for name in _names_in(value)]
    while pending:
        name = pending.pop()
        if name in scope.bindings or name not in every:
            continue
        kept: list[_Binding] = []
        for binding in every[name]:
            if binding[0] == "expr":
                assert isinstance(binding[1], ast.expr)
                value = _prune(binding[1])
                kept.append(("expr", value, scope))
                pending.extend(_names_in(value))
            elif binding[0] == "def":
                assert isinstance(binding[1], ast.FunctionDef | ast.AsyncFunctionDef)
                kept.append(_def_binding(binding[1], imports, module))
            else:
                kept.append(binding)
        scope.bindings[name] = kept
    # by name: the same whether the class was summarised whole or in parts (`_merge_class`), whose
    # attributes, and so ``values``, come in another order
    scope.bindings = dict(sorted(scope.bindings.items()))
    return scope


def _summarise_class(
    node: ast.ClassDef, imports: ImportMap, module: str, package: bool = False, *, detached: bool = False
) -> _ClassSummary:
    """A class's summary; a detached one (see `ModuleSummary`) with pruned values, `_Scope` methods and
    every method's factory worked out."""
    summary = _class_summary_of(node, imports, module)
    if not detached:
        return summary
    assigned: dict[int, list[ast.expr]] = {}  # method id -> the values it assigns (pruned)
    for name, assignments in summary.attrs.items():
        pruned: list[tuple[ast.expr | KernelRef, _Method]] = []
        for value, method in assignments:
            if not isinstance(value, KernelRef):
                value = _prune(value)
                if method is not None:
                    assigned.setdefault(id(method), []).append(value)
            pruned.append((value, method))
        summary.attrs[name] = pruned
    scopes: dict[int, _Scope] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and id(stmt) in assigned:
            scopes[id(stmt)] = _scope(stmt, assigned[id(stmt)], imports, module, package)
    for name, assignments in summary.attrs.items():
        summary.attrs[name] = [(v, scopes[id(m)] if m is not None else None) for v, m in assignments]
    summary.bases = [_prune(base) for base in summary.bases]
    for method_name in summary.methods:
        summary.factory(method_name)
    summary.methods = dict.fromkeys(summary.methods)
    return summary


def _class_summary_of(node: ast.ClassDef, imports: ImportMap, module: str) -> _ClassSummary:
    attrs: dict[str, list[tuple[ast.expr | KernelRef, _Method]]] = {}
    methods: dict[str, _Function | None] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if stmt.value is not None:
                for target in targets:
                    if isinstance(target, ast.Name):
                        attrs.setdefault(target.id, []).append((stmt.value, None))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            methods[stmt.name] = stmt
            if _is_warp_kernel(stmt, imports):
                ref = KernelRef(module, stmt.lineno, stmt.col_offset, stmt.name)
                attrs.setdefault(stmt.name, []).append((ref, None))
                continue
            self_name = _self_name(stmt)
            if self_name is None:
                continue
            index = full_body_index(stmt)
            for sub in [*index.of(ast.Assign), *index.of(ast.AnnAssign), *index.of(ast.AugAssign)]:
                if isinstance(sub, ast.Assign):
                    targets, value = list(sub.targets), sub.value
                else:
                    targets, value = [sub.target], sub.value  # type: ignore[attr-defined]
                for target in targets:
                    for part in ast.walk(target) if isinstance(target, ast.Tuple | ast.List) else [target]:
                        if (
                            isinstance(part, ast.Attribute)
                            and isinstance(part.value, ast.Name)
                            and part.value.id == self_name
                        ):
                            # unpacked or augmented: a value nothing resolves (the attribute is ambiguous)
                            plain = (
                                part is target and not isinstance(sub, ast.AugAssign) and value is not None
                            )
                            attrs.setdefault(part.attr, []).append((value if plain else part, stmt))
    return _ClassSummary(node.name, list(node.bases), attrs, methods, imports, module)


def _function_bindings(
    fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, module: str, package: bool
) -> dict[str, list[_Binding]]:
    """The names a function binds: parameters, assignments, imports, nested definitions (those of
    functions nested in it too: a name bound there is taken as ambiguous here, which is safe)."""
    found: dict[str, list[_Binding]] = {}
    args = fn.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if a is not None:
            found.setdefault(a.arg, []).append(("other",))
    index = full_body_index(fn)
    plain: set[int] = set()
    for node in index.of(ast.Assign):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, []).append(("expr", node.value, fn))
            plain.add(id(node.targets[0]))
    for ann in index.of(ast.AnnAssign):
        if isinstance(ann.target, ast.Name) and ann.value is not None:
            found.setdefault(ann.target.id, []).append(("expr", ann.value, fn))
            plain.add(id(ann.target))
    for name in index.of(ast.Name):
        if isinstance(name.ctx, ast.Store | ast.Del) and id(name) not in plain:
            found.setdefault(name.id, []).append(("other",))
    defs: list[ast.FunctionDef | ast.AsyncFunctionDef] = [
        *index.of(ast.FunctionDef),
        *index.of(ast.AsyncFunctionDef),
    ]
    for fn_def in defs:
        found.setdefault(fn_def.name, []).append(("def", fn_def))
    for cls in index.of(ast.ClassDef):
        found.setdefault(cls.name, []).append(("other",))
    imports: list[ast.Import | ast.ImportFrom] = [*index.of(ast.Import), *index.of(ast.ImportFrom)]
    for imp in imports:
        for name_, binding in _import_bindings(imp, module, package):
            found.setdefault(name_, []).append(binding)
    decls: list[ast.Global | ast.Nonlocal] = [*index.of(ast.Global), *index.of(ast.Nonlocal)]
    for decl in decls:
        for name_ in decl.names:
            found.setdefault(name_, []).append(("other",))
    return found


# --- module names ---------------------------------------------------------------------------------


def module_name(path: Path, is_package_dir: Callable[[Path], bool] | None = None) -> str:
    """The dotted module name of the file at ``path``: its path relative to the nearest folder above it
    without an ``__init__.py``."""
    check = is_package_dir or (lambda folder: (folder / "__init__.py").is_file())
    path = Path(os.path.abspath(path))
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while check(folder) and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts)


def package_root(path: Path) -> Path:
    """The topmost folder of the package holding ``path`` (``path``'s own folder when it is no package)."""
    path = Path(os.path.abspath(path))
    folder = path if path.is_dir() else path.parent
    while (folder / "__init__.py").is_file() and (folder.parent / "__init__.py").is_file():
        folder = folder.parent
    return folder


def _digest(data: bytes) -> str:
    return blake2b(data, digest_size=20).hexdigest()


_Entry = TypeVar("_Entry")


@dataclass
class _Loaded:
    """A module's text as read (its digest at once; the parse on first use)."""

    digest: str
    text: str | None
    module: str
    package: bool
    _parsed: ParsedSource | None = None

    @property
    def parsed(self) -> ParsedSource | None:
        if self._parsed is None and self.text is not None:
            self._parsed = parse_in_pieces(self.text)
        return self._parsed


class ProjectIndex:
    """Every module of a workspace by name, summarised on first use (see the module docstring).

    ``display``: how a file's path is shown in records (the engine's relative paths); ``builtins``: the
    return-type table models of other modules are built with. Not thread-safe.
    """

    def __init__(
        self,
        display: Callable[[Path], str] | None = None,
        builtins: ReturnTypes | None = None,
    ) -> None:
        self._paths: dict[str, Path] = {}  # module name -> file
        self._modules: dict[str, str] = {}  # absolute file path -> module name
        self._packages: set[str] = set()  # module names that are packages (an __init__.py)
        self._overlay: dict[str, str] = {}  # module name -> text of an open, unsaved document
        self._aliases: dict[str, str] = {}  # another name of a module (see `add_tree`) -> its name
        self._loaded: OrderedDict[str, _Loaded] = OrderedDict()
        self._models: OrderedDict[str, tuple[str, ModuleModel]] = OrderedDict()
        # module name -> (its source's size, its detached summary: valid while its digest and package flag
        # are the module's)
        self._summaries: OrderedDict[str, tuple[int, ModuleSummary]] = OrderedDict()
        # the modules whose models the analysis since the last `view` asked for: kept until the next
        # one (the launches of one file go round its targets: an LRU smaller than them re-parsed
        # every one of them at every turn, 11.7 MB of newton's source)
        self._in_use: set[str] = set()
        self._display = display or (lambda p: str(p))
        self.builtins = builtins
        self._package_dirs: dict[Path, bool] = {}
        # bumped whenever a module changes (views and the server compare it)
        self.generation = 0

    # --- building ------------------------------------------------------------------------------
    @classmethod
    def for_paths(
        cls,
        paths: Iterable[Path],
        display: Callable[[Path], str] | None = None,
        builtins: ReturnTypes | None = None,
    ) -> ProjectIndex:
        """Every ``.py`` file under ``paths`` and under the packages enclosing them."""
        index = cls(display, builtins)
        roots: list[Path] = []
        for path in paths:
            root = package_root(path)
            if path.is_dir() and not (Path(path) / "__init__.py").is_file():
                roots.append(Path(os.path.abspath(path)))
            if root not in roots:
                roots.append(root)
        for root in roots:
            index.add_tree(root)
        return index

    def _is_package_dir(self, folder: Path) -> bool:
        known = self._package_dirs.get(folder)
        if known is None:
            known = self._package_dirs[folder] = (folder / "__init__.py").is_file()
        return known

    def add_tree(self, root: Path) -> None:
        if not root.is_dir():
            if root.suffix == ".py":
                self.add_file(root)
            return
        # a package's folders without an __init__.py (implicit namespace packages, newton's `_src`) start
        # new module names; imports spell the names from the top package down: both name the module. The
        # top packages are held by the root's parent when the root is a package, else by the root (a
        # repository checked at its top: ``newton/`` is below it)
        top = root.parent if (root / "__init__.py").is_file() else root
        inside = os.path.realpath(root)
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not d.endswith(".egg-info"))
            self._package_dirs[Path(folder)] = "__init__.py" in files
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    # a workspace's link out of the tree is not read (as `check` reads none): its text
                    # would reach hovers and messages of the files that launch from it
                    if os.path.islink(path) and not _within(os.path.realpath(path), inside):
                        continue
                    self.add_file(Path(path), top)

    def add_file(self, path: Path, top: Path | None = None) -> str:
        """Index one file (again); returns its module name. ``top``: the folder holding the top package
        of a tree walked (the file's path below it is another name of the module)."""
        path = Path(os.path.abspath(path))
        name = module_name(path, self._is_package_dir)
        if top is not None:
            parts = list(path.relative_to(top).with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            alias = ".".join(parts)
            if alias and alias != name and alias not in self._paths:
                self._aliases[alias] = name
        key = str(path)
        old = self._modules.get(key)
        if old is not None and old != name:
            self._paths.pop(old, None)
        existing = self._paths.get(name)
        # two files claiming one name (scripts in separate folders): the first one found keeps it
        if existing is None or existing == path:
            self._paths[name] = path
            self._modules[key] = name
            if path.name == "__init__.py":
                self._packages.add(name)
        self._forget(name)
        return name

    def remove_file(self, path: Path) -> None:
        key = str(Path(os.path.abspath(path)))
        name = self._modules.pop(key, None)
        if name is not None and self._paths.get(name) == Path(key):
            del self._paths[name]
            self._packages.discard(name)
            self._overlay.pop(name, None)
            self._forget(name)

    def set_text(self, path: Path, text: str | None) -> str | None:
        """An open document's text replaces the file's (None: back to the file); its module name."""
        key = str(Path(os.path.abspath(path)))
        name = self._modules.get(key) or self.add_file(Path(key))
        if text is None:
            self._overlay.pop(name, None)
        elif self._overlay.get(name) == text:
            return name
        else:
            self._overlay[name] = text
        self._forget(name)
        return name

    def changed(self, path: Path) -> str | None:
        """The file at ``path`` changed on disk (its module name, None when not indexed)."""
        name = self._modules.get(str(Path(os.path.abspath(path))))
        if name is not None:
            self._forget(name)
        return name

    def _forget(self, name: str) -> None:
        self._loaded.pop(name, None)
        self._models.pop(name, None)
        self._summaries.pop(name, None)
        self.generation += 1

    # --- queries -------------------------------------------------------------------------------
    @property
    def modules(self) -> dict[str, Path]:
        return dict(self._paths)

    def module_of(self, path: str | Path) -> str | None:
        return self._modules.get(os.path.abspath(path))

    def canonical(self, module: str) -> str:
        """The module's name (``module`` may be another name of it, see `add_tree`)."""
        return module if module in self._paths else self._aliases.get(module, module)

    def path_of(self, module: str) -> Path | None:
        return self._paths.get(self.canonical(module))

    def is_package(self, module: str) -> bool:
        return self.canonical(module) in self._packages

    def _load(self, module: str) -> _Loaded | None:
        module = self.canonical(module)
        loaded = self._loaded.get(module)
        if loaded is not None:
            self._loaded.move_to_end(module)
            return loaded
        path = self._paths.get(module)
        if path is None:
            return None
        text = self._overlay.get(module)
        if text is None:
            from warp_harness.safe_read import read_regular

            try:
                data = read_regular(path, MAX_INDEXED_BYTES)
            except (OSError, ValueError):
                loaded = _Loaded("", None, module, False)
                self._remember(module, loaded)
                return loaded
            digest = _digest(data)
            text, _ = decode_source(data)
        else:
            digest = _digest(text.encode("utf-8", "surrogatepass"))
        loaded = _Loaded(digest, text, module, self.is_package(module))
        self._remember(module, loaded)
        return loaded

    def digest(self, module: str) -> str:
        """A hash of the module's text ("" when it is not indexed or cannot be read)."""
        loaded = self._load(module)
        return loaded.digest if loaded is not None else ""

    def summary(self, module: str) -> ModuleSummary | None:
        loaded = self._load(module)
        if loaded is None:
            return None
        name = loaded.module
        cached = self._summaries.get(name)
        if cached is not None and cached[1].digest == loaded.digest and cached[1].package == loaded.package:
            self._summaries.move_to_end(name)
            return cached[1]
        text = loaded.text
        if text is None:
            return None
        summary = None
        if loaded._parsed is None and len(text) > LOADED_CACHE_BYTES:
            # its tree (~25x its text) would stay in `_loaded`, the newest entry, while the file asking
            # analyses on: summarised piece by piece instead, never held whole
            summary = _summarise_text(text, name, loaded.package, loaded.digest)
        if summary is None:
            parsed = loaded.parsed
            assert parsed is not None
            summary = summarise(parsed.tree, name, loaded.package, loaded.digest, detached=True)
        self._summaries[name] = (len(text), summary)
        self._summaries.move_to_end(name)
        sizes = [size for size, _ in self._summaries.values()]
        _trim(self._summaries, sizes, SUMMARY_CACHE_SIZE, SUMMARY_CACHE_BYTES)
        return summary

    def model(self, module: str) -> ModuleModel | None:
        """The model of a module (kept for a while: its kernels are the objects launches resolve to)."""
        module = self.canonical(module)
        self._in_use.add(module)
        loaded = self._load(module)
        if loaded is None or loaded.parsed is None:
            return None
        cached = self._models.get(module)
        if cached is not None and cached[0] == loaded.digest:
            self._models.move_to_end(module)
            return cached[1]
        path = self._paths[module]
        model = build_model(loaded.parsed.text, self._display(path), self.builtins, loaded.parsed)
        self._models[module] = (loaded.digest, model)
        self._trim_models()
        return model

    def checked(self, path: str, data: bytes) -> tuple[ParsedSource, ModuleModel | None] | None:
        """The parse (and the model, when built) of the indexed file at ``path`` when they were made from
        exactly ``data`` (by `keep` or to resolve a launch): a check reuses them instead of redoing them."""
        module = self._modules.get(os.path.abspath(path))
        if module is None or module in self._overlay:
            return None
        loaded = self._loaded.get(module)
        if loaded is None or loaded._parsed is None or loaded.digest != _digest(data):
            return None
        cached = self._models.get(module)
        if cached is None or cached[0] != loaded.digest:
            return loaded._parsed, None
        self._models.move_to_end(module)
        return loaded._parsed, cached[1]

    def keep(self, path: str, data: bytes, parsed: ParsedSource, model: ModuleModel) -> None:
        """A check built ``model`` from ``data`` at ``path``: launches resolving into it reuse it. Kept only
        when it defines a kernel (nothing resolves into another module's model otherwise): the trees of
        the other files checked are freed with their check."""
        module = self._modules.get(os.path.abspath(path))
        if module is None or module in self._overlay or not any(k.is_kernel for k in model.all_kernels):
            return
        digest = _digest(data)
        loaded = self._loaded.get(module)
        if loaded is None or loaded.digest != digest or loaded._parsed is not parsed:
            kept = _Loaded(digest, parsed.text, module, self.is_package(module), parsed)
            self._remember(module, kept)
        self._models[module] = (digest, model)
        self._models.move_to_end(module)
        self._trim_models()
        if len(parsed.text) > LOADED_CACHE_BYTES:
            # its parse goes with the next file's `view`: summarised now, a file resolving a launch through
            # it later (newton's steel tests and its 1 MB solver) does not parse it again
            self.summary(module)

    def _trim_models(self) -> None:
        sizes = [len(model.source.text) for _, model in self._models.values()]
        _trim(self._models, sizes, MODEL_CACHE_SIZE, MODEL_CACHE_BYTES, self._in_use)

    def _remember(self, module: str, loaded: _Loaded) -> None:
        self._loaded[module] = loaded
        self._loaded.move_to_end(module)
        sizes = [len(entry.text or "") for entry in self._loaded.values()]
        _trim(self._loaded, sizes, LOADED_CACHE_SIZE, LOADED_CACHE_BYTES, self._in_use)

    def kernel(self, ref: KernelRef) -> tuple[ModuleModel, KernelDef] | None:
        model = self.model(ref.module)
        if model is None:
            return None
        found = _kernel_at(model, ref)
        return (model, found) if found is not None else None

    def view(self, path: str) -> ProjectView:
        """The index as seen from the file at ``path`` (call `ProjectView.attach` with its model)."""
        module = self.module_of(path) if path and not path.startswith("<") else None
        if self._in_use:  # what the last analysis held over the budgets goes now
            self._in_use.clear()
            self._trim_models()
            sizes = [len(entry.text or "") for entry in self._loaded.values()]
            _trim(self._loaded, sizes, LOADED_CACHE_SIZE, LOADED_CACHE_BYTES)
        if module is not None:
            self._make_room(module)
        return ProjectView(self, module)

    def _make_room(self, module: str) -> None:
        """Before ``module`` is analysed: the other modules' models and trees kept within the budgets less
        its own size, so a large file's tree and model do not come on top of full caches (the peak memory
        of a process); its own entries stay (its check reuses them)."""
        loaded = self._loaded.get(module)
        text = loaded.text if loaded is not None else self._overlay.get(module)
        if text is not None:
            size = len(text)
        else:
            try:
                size = os.stat(self._paths[module]).st_size
            except (OSError, KeyError):
                return
        models = {name: len(model.source.text) for name, (_, model) in self._models.items()}
        _make_room(self._models, models, module, MODEL_CACHE_BYTES - size)
        texts = {name: len(entry.text or "") for name, entry in self._loaded.items()}
        _make_room(self._loaded, texts, module, LOADED_CACHE_BYTES - size)


def _summarise_text(text: str, module: str, package: bool, digest: str) -> ModuleSummary | None:
    """`summarise_pieces` of ``text``; None when it must be parsed whole (see `NotInPieces`)."""
    try:
        return summarise_pieces(top_level_pieces(text), module, package, digest)
    except NotInPieces:
        return None


def _trim(
    cache: OrderedDict[str, _Entry],
    sizes: list[int],
    count: int,
    budget: int,
    pinned: Container[str] = frozenset(),
) -> None:
    """Drop the oldest entries of ``cache`` (``sizes``: their source lengths, in order) until at most
    ``count`` are left whose sizes add up to at most ``budget``; the newest entry and the ``pinned`` ones
    always stay."""
    total = sum(sizes)
    left = len(cache)
    for name, size in list(zip(list(cache)[:-1], sizes[:-1], strict=True)):
        if left <= count and total <= budget:
            break
        if name in pinned:
            continue
        del cache[name]
        total -= size
        left -= 1


def _make_room(cache: OrderedDict[str, _Entry], sizes: dict[str, int], keep: str, budget: int) -> None:
    """Drop the oldest entries of ``cache`` but ``keep``'s until the others' ``sizes`` add up to at most
    ``budget``."""
    total = sum(size for name, size in sizes.items() if name != keep)
    for name, size in sizes.items():
        if total <= budget:
            break
        if name != keep:
            del cache[name]
            total -= size


def _kernel_at(model: ModuleModel, ref: KernelRef) -> KernelDef | None:
    # a position map kept on the model: a scan per launch was quadratic in a file's kernels (5.7 of 21 s
    # at 4,000 kernels). The incremental analyser moves nodes in place, so a hit is checked against the
    # node and a miss or a stale hit scans (and rebuilds the map)
    kernels = model.all_kernels
    cached: tuple[list[KernelDef], dict[tuple[int, int], KernelDef]] | None = getattr(
        model, "_kernel_positions", None
    )
    if cached is not None and cached[0] is kernels:
        kernel = cached[1].get((ref.line, ref.col))
        if kernel is not None and _defined_at(kernel, ref):
            return kernel
    positions: dict[tuple[int, int], KernelDef] = {}
    for kernel in kernels:
        if kernel.is_kernel:
            positions.setdefault((kernel.node.lineno, kernel.node.col_offset), kernel)
    model._kernel_positions = (kernels, positions)  # type: ignore[attr-defined]
    return positions.get((ref.line, ref.col))


def _defined_at(kernel: KernelDef, ref: KernelRef) -> bool:
    node = kernel.node
    return node.lineno == ref.line and node.col_offset == ref.col and kernel.is_kernel


Resolution = Literal["same-file", "other-module", "factory", "unresolved"]


@dataclass
class _Env:
    """Where an expression is evaluated: a module, the function around it (or None), its class."""

    module: str
    function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | _Scope | None
    cls: str | None


class ProjectView:
    """The index as seen from one file under analysis (`rules.base.RuleContext.project`)."""

    def __init__(self, index: ProjectIndex, module: str | None) -> None:
        self.index = index
        self.module = module or "__main__"
        self._named = module is not None
        self.model: ModuleModel | None = None
        self._summary: ModuleSummary | None = None
        self._classes_of: dict[int, str] = {}
        self._functions: dict[int, dict[str, list[_Binding]]] = {}
        self._sites: dict[int, tuple[LaunchSite, _Kernel | None]] = {}
        self._owners: dict[int, ModuleModel] = {}
        # module name -> digest ("" when absent) of every module consulted
        self.deps: dict[str, str] = {}
        # the launch sites (of one kernel) a kernel rule is asked about in the engine's launch-side pass
        self.focus: list[LaunchSite] | None = None

    def attach(self, model: ModuleModel) -> ProjectView:
        self.model = model
        self._summary = None
        self._sites.clear()
        return self

    @contextmanager
    def focused(self, sites: list[LaunchSite] | None) -> Iterator[None]:
        previous, self.focus = self.focus, sites
        try:
            yield
        finally:
            self.focus = previous

    # --- this file -----------------------------------------------------------------------------
    def _own_summary(self) -> ModuleSummary:
        if self._summary is None:
            assert self.model is not None
            package = self.index.is_package(self.module) if self._named else False
            self._summary = summarise(self.model.tree, self.module, package)
            for stmt in _top_statements(self.model.tree.body):
                if isinstance(stmt, ast.ClassDef):
                    for item in stmt.body:
                        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                            self._classes_of[id(item)] = stmt.name
        return self._summary

    def _summary_of(self, module: str) -> ModuleSummary | None:
        if module == self.module and self.model is not None:
            return self._own_summary()
        summary = self.index.summary(module)
        self.deps[module] = summary.digest if summary is not None else self.index.digest(module)
        return summary

    def _module_exists(self, module: str) -> bool:
        exists = module == self.module or self.index.path_of(module) is not None
        if module != self.module and module not in self.deps:
            self.deps[module] = self.index.digest(module) if exists else ""
        return exists

    # --- launches ------------------------------------------------------------------------------
    def resolve(self, site: LaunchSite) -> tuple[KernelRef, bool] | None:
        """(the kernel ``site`` launches, whether through a factory call), or None."""
        found = self._resolve_site(site)
        return (found.ref, found.via_factory) if found is not None else None

    def _resolve_site(self, site: LaunchSite) -> _Kernel | None:
        cached = self._sites.get(id(site.node))
        if cached is not None and cached[0] is site:
            return cached[1]
        result: _Kernel | None = None
        if self.model is not None and site.kernel_expr is not None:
            scope = site.scope
            function = scope if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef) else None
            self._own_summary()
            cls = self._classes_of.get(id(function)) if function is not None else None
            value = self._eval(site.kernel_expr, _Env(self.module, function, cls), 0)
            result = value if isinstance(value, _Kernel) else None
        self._sites[id(site.node)] = (site, result)
        return result

    def kernel_of(self, site: LaunchSite) -> KernelDef | None:
        """The kernel ``site`` certainly launches (this file's or another module's), or None."""
        found = self._resolve_site(site)
        if found is None:
            return None
        ref = found.ref
        if ref.module == self.module and self.model is not None:
            kernel = _kernel_at(self.model, ref)
            if kernel is not None:
                self._owners[id(kernel)] = self.model
            return kernel
        loaded = self.index.kernel(ref)
        if loaded is None:
            return None
        model, kernel = loaded
        self._owners[id(kernel)] = model
        return kernel

    def model_of(self, kernel: KernelDef) -> ModuleModel | None:
        """The model of the module defining ``kernel`` (one `kernel_of` returned), or None."""
        return self._owners.get(id(kernel))

    # --- evaluation ----------------------------------------------------------------------------
    def _eval(self, node: ast.expr, env: _Env, depth: int) -> _Value | None:
        if depth > MAX_DEPTH:
            return None
        if isinstance(node, ast.Name):
            return self._name(node.id, env, depth + 1)
        if isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and env.cls is not None
                and env.function is not None
                and _self_name(env.function) == node.value.id
            ):
                return self._class_attr(env.module, env.cls, node.attr, depth + 1, set())
            base = self._eval(node.value, env, depth + 1)
            if isinstance(base, _Module):
                return self._module_attr(base.name, node.attr, depth + 1)
            if isinstance(base, _Class):
                return self._class_attr(base.module, base.name, node.attr, depth + 1, set(), instance=False)
            return None
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and env.cls is not None
                and env.function is not None
                and _self_name(env.function) == func.value.id
            ):
                ref = self._class_factory(env.module, env.cls, func.attr, depth + 1, set())
                return _Kernel(ref, True) if ref is not None else None
            callee = self._eval(func, env, depth + 1)
            if isinstance(callee, _Factory):
                return _Kernel(callee.ref, True)
            return None
        if isinstance(node, ast.IfExp):
            a = self._eval(node.body, env, depth + 1)
            b = self._eval(node.orelse, env, depth + 1)
            return a if a is not None and a == b else None
        return None

    def _name(self, name: str, env: _Env, depth: int) -> _Value | None:
        if env.function is not None:
            bindings = self._bindings_of(env.function, env.module)
            if name in bindings:
                return self._binding(bindings[name], env, depth)
        return self._module_attr(env.module, name, depth)

    def _bindings_of(
        self, fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | _Scope, module: str
    ) -> dict[str, list[_Binding]]:
        if isinstance(fn, _Scope):
            return fn.bindings
        cached = self._functions.get(id(fn))
        if cached is None:
            package = self.index.is_package(module)
            cached = self._functions[id(fn)] = _function_bindings(fn, module, package)
        return cached

    def _binding(self, bindings: list[_Binding], env: _Env, depth: int) -> _Value | None:
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        kind = binding[0]
        if kind == "expr":
            value = binding[1]
            assert isinstance(value, ast.expr)
            fn = binding[2]
            inner = _Env(
                env.module,
                fn if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | _Scope) else None,
                env.cls,
            )
            if fn is None:
                inner = _Env(env.module, None, None)
            return self._eval(value, inner, depth + 1)
        if kind == "def":
            node = binding[1]
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            summary = self._summary_of(env.module)
            if summary is None:
                return None
            if _is_warp_kernel(node, summary.imports):
                return _Kernel(KernelRef(env.module, node.lineno, node.col_offset, node.name))
            ref = summary.factory(node)
            return _Factory(ref) if ref is not None else None
        if kind == "import":
            module, attr = binding[1], binding[2]
            assert isinstance(module, str)
            if attr is None:
                return _Module(module) if self._module_exists(module) else None
            assert isinstance(attr, str)
            sub = f"{module}.{attr}"
            if self._module_exists(sub):  # `from pkg import kernels`: the submodule
                return _Module(sub)
            return self._module_attr(module, attr, depth + 1)
        if kind == "kernel":
            kernel_ref = binding[1]
            assert isinstance(kernel_ref, KernelRef)
            return _Kernel(kernel_ref)
        if kind == "factory":
            factory_ref = binding[1]
            return _Factory(factory_ref) if isinstance(factory_ref, KernelRef) else None
        if kind == "class":
            name = binding[1]
            assert isinstance(name, str)
            return _Class(env.module, name)
        return None

    def _module_attr(self, module: str, name: str, depth: int) -> _Value | None:
        if depth > MAX_DEPTH:
            return None
        summary = self._summary_of(module) if self._module_exists(module) else None
        if summary is not None and name in summary.names:
            return self._binding(summary.names[name], _Env(module, None, None), depth + 1)
        sub = f"{module}.{name}" if module else name
        if self._module_exists(sub):
            return _Module(sub)
        if summary is not None:
            found = [
                v
                for star in summary.stars
                if not name.startswith("_")
                for v in [self._module_attr(star, name, depth + 1)]
                if v is not None
            ]
            if len(found) == 1:
                return found[0]
        return None

    def _class_summary(self, module: str, cls: str) -> _ClassSummary | None:
        summary = self._summary_of(module)
        return summary.class_summary(cls) if summary is not None else None

    def _bases(self, module: str, info: _ClassSummary, depth: int) -> Iterator[_Class]:
        for base in info.bases:
            value = self._eval(base, _Env(module, None, None), depth + 1)
            if isinstance(value, _Class):
                yield value

    def _class_attr(
        self, module: str, cls: str, attr: str, depth: int, seen: set[tuple[str, str]], instance: bool = True
    ) -> _Value | None:
        if depth > MAX_DEPTH or (module, cls) in seen:
            return None
        seen.add((module, cls))
        info = self._class_summary(module, cls)
        if info is None:
            return None
        assignments = info.attrs.get(attr)
        if assignments:
            values: set[_Value | None] = set()
            for value, method in assignments:
                if isinstance(value, ast.Constant) and value.value is None:
                    continue  # `self.k = None` until set up
                if not instance and method is not None:
                    return None
                if isinstance(value, KernelRef):  # a kernel defined in the class body
                    values.add(_Kernel(value))
                else:
                    values.add(self._eval(value, _Env(module, method, cls), depth + 1))
            if len(values) == 1:
                return values.pop()
            return None
        if attr in info.methods:
            return None
        found = {
            v
            for b in self._bases(module, info, depth)
            for v in [self._class_attr(b.module, b.name, attr, depth + 1, seen, instance)]
        }
        return found.pop() if len(found) == 1 else None

    def _class_factory(
        self, module: str, cls: str, method: str, depth: int, seen: set[tuple[str, str]]
    ) -> KernelRef | None:
        if depth > MAX_DEPTH or (module, cls) in seen:
            return None
        seen.add((module, cls))
        info = self._class_summary(module, cls)
        if info is None:
            return None
        if method in info.methods:
            return info.factory(method)
        if method in info.attrs:
            return None
        for base in self._bases(module, info, depth):
            found = self._class_factory(base.module, base.name, method, depth + 1, seen)
            if found is not None:
                return found
        return None


def _self_name(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | _Scope) -> str | None:
    if isinstance(fn, _Scope):
        return fn.self_name
    args = fn.args.posonlyargs or fn.args.args
    if not args:
        return None
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list
    ):
        return None
    return args[0].arg


# --- statistics -----------------------------------------------------------------------------------

Form = Literal["name", "attribute", "factory-call", "other"]


@dataclass
class LaunchStatistics:
    """Launch sites by the form of their kernel expression and by how it resolved."""

    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    files: int = 0
    unresolved: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def by_form(self, form: str) -> Counter[str]:
        return Counter({r: n for (f, r), n in self.counts.items() if f == form})

    def resolvable_rate(self) -> float:
        """Resolved among sites whose kernel is a name, an attribute or a call."""
        wanted = [(f, r, n) for (f, r), n in self.counts.items() if f != "other"]
        total = sum(n for _, _, n in wanted)
        resolved = sum(n for _, r, n in wanted if r != "unresolved")
        return resolved / total if total else 1.0

    def as_dict(self) -> dict[str, object]:
        forms: dict[str, dict[str, int]] = {}
        for (form, how), n in sorted(self.counts.items()):
            forms.setdefault(form, {})[how] = n
        return {
            "files": self.files,
            "launches": self.total,
            "by_form": forms,
            "resolved_rate": round(self.resolvable_rate(), 4),
        }


def expression_form(node: ast.expr | None) -> Form:
    if isinstance(node, ast.Name):
        return "name"
    if isinstance(node, ast.Attribute):
        return "attribute"
    if isinstance(node, ast.Call):
        return "factory-call"
    return "other"


def launch_statistics(paths: Sequence[Path], *, keep_unresolved: int = 0) -> LaunchStatistics:
    """How the launches of the Python files under ``paths`` name their kernel and whether the workspace
    model resolves it (``same-file``, ``other-module``, ``factory``, ``unresolved``). ``keep_unresolved``:
    how many unresolved sites to list (path, line, expression)."""
    index = ProjectIndex.for_paths(paths)
    stats = LaunchStatistics()
    for path in iter_python_files(list(paths)):
        module = index.module_of(path)
        if module is None:
            module = index.add_file(path)
        model = index.model(module)
        if model is None:
            continue
        stats.files += 1
        if not model.launches:
            continue
        view = index.view(str(path)).attach(model)
        for site in model.launches:
            form = expression_form(site.kernel_expr)
            how: Resolution
            name = site.kernel_name
            local = model.kernel_named(name)
            if local is not None and not _rebound(site, name):
                how = "same-file"
            else:
                found = view.resolve(site)
                if found is None:
                    how = "unresolved"
                    if len(stats.unresolved) < keep_unresolved and site.kernel_expr is not None:
                        text = ast.unparse(site.kernel_expr)
                        stats.unresolved.append((str(path), site.node.lineno, text))
                elif found[1]:
                    how = "factory"
                elif found[0].module == view.module:
                    how = "same-file"
                else:
                    how = "other-module"
            stats.counts[(form, how)] += 1
    return stats


def _rebound(site: LaunchSite, name: str | None) -> bool:
    """A cheap stand-in for `rules.queries.name_is_rebound` (statistics only)."""
    scope = site.scope
    if name is None or not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    return name in _function_bindings(scope, "", False)


__all__ = [
    "KernelRef",
    "LaunchStatistics",
    "ModuleSummary",
    "ProjectIndex",
    "ProjectView",
    "expression_form",
    "launch_statistics",
    "module_name",
    "package_root",
    "resolve_relative",
    "summarise",
]


def _within(path: str, folder: str) -> bool:
    """Whether the resolved ``path`` is ``folder`` or below it."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
