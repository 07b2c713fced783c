"""What the code of a kernel's factory reads from modules, and a digest of it (issue #31).

A factory computes values its kernel reads: mujoco-warp 4.0.0's ``constraint.py`` writes
``IS_ELLIPTIC = cone_type == types.ConeType.ELLIPTIC`` in ``_efc_contact_update`` (``ConeType`` an
enum of the workspace module ``types.py``) and the kernel reads ``wp.static(IS_ELLIPTIC)``. The
capture records the value the kernel closed over, as data (``recorder._cell``), with two digests:
the factory's code around the kernel (``identity.factory_digest``) and ``reads_digest``, the texts
of the module-level names that code reads. While both hold, the unchanged code reads unchanged
definitions and computes, from the same call's arguments, what it computed at capture; the replay
then binds the recorded value (``daemon/hermetic_factory.py``).

``reads_digest`` follows each name the factory's code reads (its own locals, parameters and Warp
aside) to what binds it at the top of its module, and hashes each binding statement's syntax tree
(its formatting and comments aside): a ``def`` or ``class`` whole, with the module names its body
reads, an assignment with what it reads, an import of a workspace module followed into that
module's text (the name it imports, or the attribute the code reads of the module:
``types.ConeType`` is ``ConeType``'s ``class`` statement in ``types.py``; an ``import`` inside the
factory or a function it reads, resolved as the module's would be). A ``@wp.func``,
``@wp.kernel`` or ``@wp.struct`` is hashed by its decorators and name (Python never runs its body
while a factory runs; the build makes it from the saved text). An import of anything else (Warp,
numpy, a package installed outside the workspace: the user's environment) is hashed as the import
statement alone; a name the module does not bind as a builtin. Refused (``Unreadable``, the value is
then not trusted): a name some function of its module declares ``global`` (rebound at run time), a
module read whole (not an attribute of it), more than ``MAX_NAMES`` names, an import out of the
workspace. Text only: nothing imported or executed; the recorder (in the user's process, at
capture) and the replay (in the daemon, on the saved texts) compute it with the same code.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from warp_harness.capture.identity import factory_chain
from warp_harness.daemon import hermetic_imports
from warp_harness.daemon.hermetic_contract import NotHermetic
from warp_harness.daemon.hermetic_imports import Found, Sources
from warp_harness.model.project import module_name

# the names (and attributes of modules) one digest follows, all modules together
MAX_NAMES = 512
_WARP_DEFINITIONS = ("kernel", "func", "func_native", "struct")


class Unreadable(Exception):
    """Why what a factory's code reads cannot be digested (its computed values are not trusted)."""


# a name read, and the attribute read of it (``types.ConeType.ELLIPTIC``: ("types", "ConeType"))
Read = tuple[str, str | None]


def warp_aliases(tree: ast.Module) -> set[str]:
    """The names a module's text binds Warp under (``wp`` always, as ``hermetic_build`` takes it)."""
    return {"wp"} | {
        a.asname or a.name
        for n in tree.body
        if isinstance(n, ast.Import)
        for a in n.names
        if a.name == "warp"
    }


def _bound_inside(node: ast.AST, skip: frozenset[int] | set[int] = frozenset()) -> set[str]:
    """Every name bound anywhere inside ``node`` (parameters, assignment and loop targets, nested
    ``def``s and ``class``es, imports, ``except ... as``): its locals, at any depth of its scopes;
    the nodes in ``skip`` (by id) and what is under them left out."""
    return _bound_names(node, nested=True, skip=skip)


def _bound_names(node: ast.AST, *, nested: bool, skip: frozenset[int] | set[int] = frozenset()) -> set[str]:
    """The names bound under ``node``: in the scopes nested in it too (``nested``: a function's
    locals at any depth, its parameters included), or only in its own scope (a module's statement:
    a ``def``, ``class`` or ``lambda`` in it binds its name, not what is inside)."""
    out: set[str] = set()
    todo: list[ast.AST] = [node]
    while todo:
        sub = todo.pop()
        if id(sub) in skip:
            continue
        if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda) and not (
            nested and sub is node
        ):
            if not isinstance(sub, ast.Lambda):
                out.add(sub.name)
            if not nested:
                continue
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
            out.add(sub.id)
        elif nested and isinstance(sub, ast.arg):
            out.add(sub.arg)
        elif isinstance(sub, ast.alias):
            out.add((sub.asname or sub.name).split(".")[0])
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            out.add(sub.name)
        todo.extend(ast.iter_child_nodes(sub))
    return out


def _warp_definition(node: ast.AST, aliases: set[str]) -> bool:
    """A ``def``/``class`` decorated with ``@wp.kernel``/``@wp.func``/``@wp.struct`` (with or without
    arguments): Python never runs its body; Warp reads its text."""
    if not isinstance(node, ast.FunctionDef | ast.ClassDef):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id in aliases
            and target.attr in _WARP_DEFINITIONS
        ):
            return True
    return False


def _loads(node: ast.AST, skip: set[int]) -> Iterator[Read]:
    """The names ``node`` loads, each with the attribute read of it, leaving out the nodes in
    ``skip`` (by id) and what is under them."""
    todo: list[ast.AST] = [node]
    while todo:
        sub = todo.pop()
        if id(sub) in skip:
            continue
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and isinstance(sub.value.ctx, ast.Load)
        ):
            yield sub.value.id, sub.attr
            continue
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            yield sub.id, None
            continue
        todo.extend(ast.iter_child_nodes(sub))


def _warp_bodies(node: ast.AST, aliases: set[str], skip: set[int]) -> set[int]:
    """The ids of the statements of the bodies of the Warp definitions inside ``node`` (not looked
    for under the nodes in ``skip``)."""
    out: set[int] = set()
    todo: list[ast.AST] = [node]
    while todo:
        sub = todo.pop()
        if id(sub) in skip:
            continue
        if sub is not node and _warp_definition(sub, aliases):
            assert isinstance(sub, ast.FunctionDef | ast.ClassDef)
            out |= {id(s) for s in sub.body}
            todo.extend(c for c in ast.iter_child_nodes(sub) if id(c) not in out)
            continue
        todo.extend(ast.iter_child_nodes(sub))
    return out


def _code_reads(node: ast.AST, aliases: set[str], skip: set[int], local: set[str]) -> list[Read]:
    """The module names the code ``node`` reads (what it binds itself, ``local`` and Warp aside),
    the nodes in ``skip`` (the bodies of the Warp definitions inside it, ``_warp_bodies``) aside."""
    return sorted(
        {(n, a) for n, a in _loads(node, skip) if n not in local and n not in aliases},
        key=lambda r: (r[0], r[1] or ""),
    )


@dataclass(frozen=True)
class _Factory:
    """What the code of a kernel's factory reads: names of its module and the names its own
    ``import`` statements bind (``reads``, each with the attribute read of it), and those statements
    by the name each binds (``imports``)."""

    reads: list[Read]
    imports: dict[str, list[ast.Import | ast.ImportFrom]]


def _factory(tree: ast.Module, qualname: str, definition: tuple[int, int] | None) -> _Factory:
    chain = factory_chain(tree, qualname, definition)
    if chain is None:
        raise Unreadable(f"`{qualname}` names no single nested def of the text")
    outer, kernel = chain[0], chain[-1]
    skip = {id(d) for d in outer.decorator_list} | {id(kernel.args)} | {id(s) for s in kernel.body}
    if kernel.returns is not None:
        skip.add(id(kernel.returns))
    return _scan(outer, warp_aliases(tree), skip)


def _scan(
    function: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, aliases: set[str], skip: set[int]
) -> _Factory:
    """What the code of ``function`` reads (``_Factory``), the nodes in ``skip``, the bodies of the
    Warp definitions inside it and the annotations of its own parameters and return aside (Python
    evaluates those when the ``def`` runs, but nothing a call computes reads them: newton's
    ``def test_body_state(model: newton.Model, ...)`` would otherwise reach the whole package)."""
    skip = skip | _warp_bodies(function, aliases, skip)
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        a = function.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
        skip |= {id(p.annotation) for p in params if p is not None and p.annotation is not None}
        if function.returns is not None:
            skip.add(id(function.returns))
    imports: dict[str, list[ast.Import | ast.ImportFrom]] = {}
    todo: list[ast.AST] = [function]
    while todo:
        sub = todo.pop()
        if id(sub) in skip:
            continue
        if isinstance(sub, ast.Import | ast.ImportFrom):  # `from .types import ConeType` in the factory
            for alias in sub.names:
                imports.setdefault((alias.asname or alias.name).split(".")[0], []).append(sub)
        todo.extend(ast.iter_child_nodes(sub))
    local = (_bound_inside(function, skip) - {function.name}) - set(imports)
    return _Factory(_code_reads(function, aliases, skip, local), imports)


def module_reads(tree: ast.Module, qualname: str, definition: tuple[int, int] | None = None) -> list[Read]:
    """The module-level names the code of the factory of ``qualname`` reads around the kernel (the
    code ``identity.factory_digest`` covers: the outermost factory, its decorators, the kernel's
    parameters and body aside), and the names its own imports bind, with the attribute read of each;
    ``Unreadable`` when ``qualname`` names no single nested def (``definition``:
    ``identity.factory_chain``)."""
    return _factory(tree, qualname, definition).reads


@dataclass(frozen=True)
class _Unit:
    dotted: str
    path: str
    tree: ast.Module
    package: Found | None  # the module as an import names it (None: the factory's own)


# parsed texts by digest (a build of many factory kernels reads the same modules)
_TREES: OrderedDict[str, ast.Module] = OrderedDict()


def _parsed(text: str, path: str) -> ast.Module:
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    tree = _TREES.get(key)
    if tree is None:
        try:
            tree = ast.parse(text, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise Unreadable(f"`{path}` does not parse ({type(exc).__name__})") from exc
        _TREES[key] = tree
        while len(_TREES) > 16:
            _TREES.popitem(last=False)
    _TREES.move_to_end(key)
    return tree


def _module_scope_names(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds in its module's scope (not those bound inside its
    functions, classes and lambdas)."""
    return _bound_names(statement, nested=False)


@dataclass
class _Index:
    """A module's top-level statements by the names they bind (a block's statement whole: an ``if``
    with its test), and the names a function of it declares ``global``."""

    bindings: dict[str, list[ast.stmt]]
    rebound: set[str]

    @classmethod
    def of(cls, tree: ast.Module) -> _Index:
        bindings: dict[str, list[ast.stmt]] = {}
        for statement in tree.body:
            for name in sorted(_module_scope_names(statement)):
                bindings.setdefault(name, []).append(statement)
        rebound = {name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names}
        return cls(bindings, rebound)


# the index of a syntax tree (kept with the tree: an id is never reused while its object lives)
_INDEXES: OrderedDict[int, tuple[ast.Module, _Index]] = OrderedDict()


class _Digest:
    def __init__(self, sources: Sources) -> None:
        # workspace modules only: an import of anything else is the user's environment
        self.sources = replace(sources, trust_installed=False)
        self.hash = hashlib.sha256()
        self.seen: set[tuple[str, str, str | None]] = set()
        self.todo: list[tuple[_Unit, str, str | None]] = []
        self.indexes: dict[str, _Index] = {}

    def index(self, unit: _Unit) -> _Index:
        found = self.indexes.get(unit.path)
        if found is None:
            kept = _INDEXES.get(id(unit.tree))
            if kept is None or kept[0] is not unit.tree:
                kept = _INDEXES[id(unit.tree)] = (unit.tree, _Index.of(unit.tree))
                while len(_INDEXES) > 32:
                    _INDEXES.popitem(last=False)
            found = self.indexes[unit.path] = kept[1]
        return found

    def add(self, unit: _Unit, name: str, attr: str | None) -> None:
        key = (unit.path, name, attr)
        if key not in self.seen:
            self.seen.add(key)
            if len(self.seen) > MAX_NAMES:
                raise Unreadable(f"what it reads reaches more than {MAX_NAMES} names")
            self.todo.append((unit, name, attr))

    def run(self) -> str:
        while self.todo:
            unit, name, attr = self.todo.pop(0)
            self.hash.update(f"\0{unit.dotted}:{name}\0".encode())
            self.name(unit, name, attr)
        return self.hash.hexdigest()[:32]

    def name(self, unit: _Unit, name: str, attr: str | None) -> None:
        index = self.index(unit)
        if name in index.rebound:
            raise Unreadable(
                f"`{name}` of `{unit.dotted}` is declared `global` in a function (rebound at run time)"
            )
        found = index.bindings.get(name, [])
        if not found:
            self.hash.update(b"builtin" if hasattr(builtins, name) else b"unbound")
            return
        aliases = warp_aliases(unit.tree)
        for statement in found:
            if isinstance(statement, ast.Import | ast.ImportFrom):
                self.hash.update(ast.dump(statement).encode())
                self.imported(unit, statement, name, attr)
            elif _warp_definition(statement, aliases):
                assert isinstance(statement, ast.FunctionDef | ast.ClassDef)
                decorators = ast.dump(ast.List(statement.decorator_list, ast.Load()))
                self.hash.update(f"warp {statement.name} {decorators}".encode())
            else:
                self.hash.update(ast.dump(statement).encode())
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self.follow(unit, _scan(statement, aliases, set()))
                else:
                    skip = _warp_bodies(statement, aliases, set())
                    self.follow(unit, _Factory(_code_reads(statement, aliases, skip, set()), {}))

    def follow(self, unit: _Unit, code: _Factory) -> None:
        """What ``code`` of the module ``unit`` reads: its names, and the names its own imports bind
        (resolved as the module's, their statements hashed)."""
        for name, attr in code.reads:
            if name not in code.imports:
                self.add(unit, name, attr)
                continue
            for statement in code.imports[name]:
                self.hash.update(f"\0import in a function\0{ast.dump(statement)}".encode())
                self.imported(unit, statement, name, attr)

    def imported(
        self, unit: _Unit, statement: ast.Import | ast.ImportFrom, name: str, attr: str | None
    ) -> None:
        for alias in statement.names:
            bound = alias.asname or alias.name.split(".")[0]
            if bound != name or alias.name == "*":
                continue
            if isinstance(statement, ast.Import):
                module = alias.name if alias.asname else alias.name.split(".")[0]
                target = self.find(unit, 0, module)
                if target is not None:
                    self.module(target, attr)
                continue
            target = self.find(unit, statement.level, statement.module)
            if target is None:
                continue
            if alias.name in self.index(target).bindings:
                self.add(target, alias.name, attr)
                continue
            sub = self.submodule(target, alias.name)
            if sub is None:
                self.hash.update(b"missing")  # `from m import x` of a name `m` binds nowhere
            else:
                self.module(sub, attr)

    def module(self, unit: _Unit, attr: str | None) -> None:
        """The module ``unit`` as a value the code reads ``attr`` of."""
        if attr is None:
            raise Unreadable(f"it reads the module `{unit.dotted}` itself, not a name of it")
        if attr in self.index(unit).bindings:
            self.add(unit, attr, None)
            return
        sub = self.submodule(unit, attr)
        if sub is None:
            self.hash.update(b"missing")
        else:  # `pkg.sub` read whole: its text
            self.hash.update(ast.dump(sub.tree).encode())

    def find(self, unit: _Unit, level: int, module: str | None) -> _Unit | None:
        try:
            found = hermetic_imports.find(self.sources, unit.path, level, module)
        except NotHermetic as exc:
            raise Unreadable(str(exc)) from exc
        return self.unit(found) if isinstance(found, Found) else None

    def submodule(self, unit: _Unit, name: str) -> _Unit | None:
        if unit.package is None:
            return None
        try:
            found = hermetic_imports.submodule(self.sources, unit.package, name)
        except NotHermetic as exc:
            raise Unreadable(str(exc)) from exc
        return self.unit(found) if found is not None else None

    def unit(self, found: Found) -> _Unit:
        if found.folder:
            return _Unit(found.dotted, found.path, ast.Module([], []), found)
        try:
            text = self.sources.text(found)
        except NotHermetic as exc:
            raise Unreadable(str(exc)) from exc
        return _Unit(found.dotted, found.path, _parsed(text, found.path), found)


def reads_digest(
    tree: ast.Module,
    qualname: str,
    filename: str,
    sources: Sources,
    definition: tuple[int, int] | None = None,
) -> str:
    """A digest of the texts of what the code of the factory of ``qualname`` reads from modules
    (``module_reads``, followed as the module's docstring says), ``tree`` being the text of its
    file ``filename``; ``sources`` reads the workspace's modules (``hermetic_imports.Sources``: the
    texts it reads are kept in it, so the worker gets what the decision read). ``Unreadable`` with
    the reason when it cannot be digested."""
    digest = _Digest(sources)
    root = _Unit(module_name(Path(filename)), filename, tree, None)
    digest.follow(root, _factory(tree, qualname, definition))
    return digest.run()
