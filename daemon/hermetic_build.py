"""Build a kernel from its source without running its module's top-level code (issue #37 item 1).

Whatever runs in a process can change what that process reports, and importing a module runs
all of its top-level code. A *hermetic* build takes from the module's text only what the kernel
needs: the kernel's ``def``, the ``@wp.func``s and ``@wp.struct``s it reaches (a ``@wp.func_native``
of string-literal snippets too), and the module constants they read (literals, strings, tuples,
arithmetic of literals and other such constants, ``wp.constant(...)`` of those, an entry of a table
of them, ``_tables``, a vector or matrix type made of them by keyword and a value of it, ``_made_type``),
and executes just those statements, in source order, in a fresh
namespace that holds ``warp``, ``numpy`` and ``math`` and nothing of the workspace.

A name the kernel (or what it reaches) imports from another workspace module is followed into
that module's text (``hermetic_imports`` finds the file, as the static model names modules): the
definitions it reaches there are built by the same rules in a fresh namespace of their own, bound
under the importing name (``_Graph``); names imported from Warp, numpy, math or typing are bound
from the interpreter's own folders. On the captured path (the workspace given), a module installed
outside the workspace (the user's environment: ``hermetic_imports.installed``, decided without
importing it) is imported by the build and its values bound (``mujoco.mjMINVAL``).

A kernel that cannot be built that way is refused with the reason (``NotHermetic``): a kernel
made by a factory or inside a function, one that reaches a name bound by anything else than a
definition, a constant or such an import (a call, an installed package's name, a star import, a
closure over run-time state), a decorator other than Warp's, a file linked out of the workspace.
Such a kernel is validated the old way, by importing its module.

``build_module`` builds every kernel of a module so, and the contracts the module defines itself
with what they reach (``hermetic_contract``), for the worker (``steps/load.py``), when
``why_not`` (text only: no Warp, nothing executed; the supervisor runs it too, to report
WHD069 on the others) finds nothing against it (docs/reliability.md, "Hermetic verdicts").
"""

from __future__ import annotations

import ast
import builtins
import copy
import hashlib
import importlib
import linecache
import os
import sys
import types
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warp_harness.capture import factory_reads
from warp_harness.capture.identity import definition_of
from warp_harness.daemon import definition_time, hermetic_contract, hermetic_factory, hermetic_imports
from warp_harness.daemon.hermetic_contract import NotHermetic as NotHermetic
from warp_harness.daemon.hermetic_imports import Found, Installed, Sources

# the modules a hermetic namespace holds, under the names a module may import them as (imported
# only when a kernel is built: the supervisor, which never imports Warp, runs ``why_not``)
_LIBRARIES = hermetic_imports.LIBRARIES
# how long a chain of imports (a re-export of a re-export ...) is followed
_MAX_DEPTH = 24
_DECORATORS = {"kernel", "func", "struct", "func_native"}


def module_name_for(path: Path) -> tuple[str, Path]:
    """(dotted module name, folder to put on sys.path) for a file, honouring packages."""
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), folder


@dataclass(frozen=True)
class HermeticKernel:
    kernel: Any  # the warp.Kernel
    module_name: str  # the fresh namespace's name (its Warp module)
    statements: tuple[str, ...]  # the top-level names whose statements were executed, in order
    imported: tuple[str, ...] = ()  # the workspace modules (real paths) built beside it, from their text


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [
            t.id
            for target in node.targets
            for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            if isinstance(t, ast.Name)
        ]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    return []


def _warp_attr(node: ast.expr, aliases: set[str]) -> str | None:
    """``wp.X`` (``wp`` an alias of warp) -> "X"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
        return node.attr
    return None


def _decorator_kind(dec: ast.expr, aliases: set[str]) -> str | None:
    target = dec.func if isinstance(dec, ast.Call) else dec
    kind = _warp_attr(target, aliases)
    if kind not in _DECORATORS:
        return None
    # `@wp.func_native(snippet, adj_snippet)`: the C++ text Warp compiles into the module, as it
    # compiles a kernel's body; string literals only (newton 1.8.0's `float_flip`), nothing Python runs
    snippets = kind == "func_native" and len(dec.args) <= 2 if isinstance(dec, ast.Call) else False
    if isinstance(dec, ast.Call) and (
        (dec.args and not (snippets and all(_string(a) for a in dec.args)))
        or not all(hermetic_factory.literal_keyword(k, aliases, names=True) for k in dec.keywords)
    ):
        return None  # only literal keyword arguments (enable_backward=False, module_options={...})
    return kind


def _string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


@dataclass(frozen=True)
class _Scope:
    """What else a module's constant may read, beyond literals, its own constants and Warp."""

    numpy: frozenset[str] = frozenset()  # aliases of numpy
    math: frozenset[str] = frozenset()  # aliases of math
    imported: frozenset[str] = frozenset()  # names imported from modules other than the libraries
    shadowed: frozenset[str] = frozenset()  # names the module binds itself (a builtin it shadows)
    tables: frozenset[str] = frozenset()  # dicts of literals the module only reads entries of (``_tables``)
    # the module's names bound to a vector or matrix type it makes (``_made_type``), filled in order
    made: set[str] = field(default_factory=set, hash=False, compare=False)


def _alias_of(node: ast.expr, scope: _Scope) -> bool:
    """``C = Contract``, ``G = kinds.GeoType``: another name of an imported value, not a constant
    (a constant made of one is wrapped: ``wp.constant(...)``, ``int(...)``, arithmetic)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in scope.imported


_CASTS = {"int", "float", "bool"}
_FINFO = {"finfo", "iinfo"}
_FINFO_FIELDS = {"eps", "epsneg", "max", "min", "tiny", "smallest_normal", "resolution", "bits"}
_LIBRARY_CONSTANTS = {"pi", "e", "tau", "inf", "nan"}


def _is_constant_expr(
    node: ast.expr, aliases: set[str], constants: set[str], scope: _Scope | None = None
) -> bool:
    """Literals, names of constants, arithmetic of those, ``wp.constant(...)``, ``wp.<scalar>(...)``;
    with ``scope``, also ``int``/``float``/``bool`` of those, ``np.finfo(np.float32).eps`` (and
    ``iinfo``), ``math.pi`` (and ``e``, ``tau``, ``inf``, ``nan``), and a name imported from a
    workspace module or an attribute of one (``ShapeFlags.VISIBLE``: the build follows the import
    into that module's text and refuses it unless it is a definition or a constant there)."""

    def const(sub: ast.expr) -> bool:
        return _is_constant_expr(sub, aliases, constants, scope)

    if isinstance(node, ast.Constant):  # with ``scope``, a module-level string too: a table's key
        return isinstance(node.value, int | float | bool) or (
            scope is not None and isinstance(node.value, str)
        )
    if isinstance(node, ast.Name):
        return node.id in constants or (scope is not None and node.id in scope.imported)
    if isinstance(node, ast.UnaryOp):
        return const(node.operand)
    if isinstance(node, ast.BinOp):
        return const(node.left) and const(node.right)
    if isinstance(node, ast.Call) and _warp_attr(node.func, aliases) is not None and not node.keywords:
        return all(const(a) for a in node.args)
    if scope is None:
        return False
    if (  # `NUM_NORMAL_BINS = _POLYHEDRON_BINS[NORMAL_BINNING_POLYHEDRON]`: an entry of a table
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in scope.tables
        and node.value.id in constants
    ):
        return const(node.slice)
    if isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load):  # `((1.0, 0.0, 0.0), ...)`
        return all(const(e) for e in node.elts)
    if (  # `FACE_NORMALS = _face_normals_mat_type(*_NORMALS_DATA[KEY])`: a value of a made type
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in scope.made
        and node.func.id in constants
        and not node.keywords
    ):
        return all(const(a.value if isinstance(a, ast.Starred) else a) for a in node.args)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CASTS
        and node.func.id not in scope.shadowed
        and not node.keywords
        and len(node.args) == 1
    ):
        return const(node.args[0])
    if isinstance(node, ast.Attribute):
        root = node.value
        if isinstance(root, ast.Name):
            if root.id in scope.math | scope.numpy:
                return node.attr in _LIBRARY_CONSTANTS
            return root.id in scope.imported  # ShapeFlags.VISIBLE
        if (  # np.finfo(np.float32).eps
            isinstance(root, ast.Call)
            and isinstance(root.func, ast.Attribute)
            and isinstance(root.func.value, ast.Name)
            and root.func.value.id in scope.numpy
            and root.func.attr in _FINFO
            and not root.keywords
            and len(root.args) == 1
            and isinstance(root.args[0], ast.Attribute)
            and isinstance(root.args[0].value, ast.Name)
            and root.args[0].value.id in scope.numpy
            and node.attr in _FINFO_FIELDS
        ):
            return True
        if isinstance(root, ast.Attribute):
            return const(root) and isinstance(root.value, ast.Name) and root.value.id in scope.imported
    return False


_ENUM_BASES = {"IntEnum", "IntFlag", "Enum", "Flag"}
_TYPE_CONSTRUCTORS = {"vector", "matrix"}


def _is_type_class(node: ast.stmt, aliases: set[str]) -> bool:
    """``class vec6f(wp.types.vector(length=6, dtype=wp.float32)): pass`` (newton's, mujoco-warp's
    vector and matrix types): a Warp type constructor of literals as the only base, an empty body."""
    if not isinstance(node, ast.ClassDef) or node.decorator_list or node.keywords or len(node.bases) != 1:
        return False
    base = node.bases[0]
    if not (isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute)):
        return False
    root: ast.expr = base.func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not (isinstance(root, ast.Name) and root.id in aliases) or base.func.attr not in _TYPE_CONSTRUCTORS:
        return False
    if not all(_is_type_argument(a, aliases) for a in [*base.args, *(k.value for k in base.keywords)]):
        return False
    return all(
        isinstance(b, ast.Pass) or (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))
        for b in node.body
    )


def _is_type_argument(node: ast.expr, aliases: set[str]) -> bool:
    """A literal, a tuple of literals, ``float``/``int``/``bool`` or a ``wp.<name>`` (a dtype)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float | bool)
    if isinstance(node, ast.Tuple):
        return all(_is_type_argument(e, aliases) for e in node.elts)
    if isinstance(node, ast.Name):
        return node.id in ("float", "int", "bool")
    return _warp_attr(node, aliases) is not None


def _imported_attribute(node: ast.expr, scope: _Scope) -> bool:
    """``mujoco.mjMINVAL``, ``kinds.GeoType.BOX``: an attribute of a name imported from a module
    other than the libraries (the build follows the import: a workspace module's definition, or a
    module installed outside the workspace, ``hermetic_imports.installed``)."""
    if not isinstance(node, ast.Attribute):
        return False
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in scope.imported


def _is_enum_class(node: ast.stmt, scope: _Scope | None = None) -> bool:
    """``class GeoType(IntEnum)`` of integer literals only (newton's ``GeoType.BOX`` in a kernel:
    Warp reads the member as a constant), with no decorator or keyword; its base must still be
    reached through an import of ``enum``. With ``scope``, a member may also be an attribute of an
    imported name (mujoco-warp's ``CONSTRAINT = mujoco.mjtDisableBit.mjDSBL_CONSTRAINT``)."""
    if not isinstance(node, ast.ClassDef) or node.decorator_list or node.keywords or len(node.bases) != 1:
        return False
    base = node.bases[0]
    if (base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)) not in _ENUM_BASES:
        return False
    members: set[str] = set()
    for stmt in node.body:
        if (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        ):
            continue  # a docstring
        if isinstance(stmt, ast.FunctionDef) and _plain_method(stmt) and not _special(stmt.name):
            continue  # runs when called (what it reads is still reached, so still refused if not buildable)
        if not (
            isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
        ):
            return False
        if not _is_constant_expr(stmt.value, set(), members) and not (
            scope is not None and _imported_attribute(stmt.value, scope)
        ):
            return False
        members.add(stmt.targets[0].id)
    return bool(members)


def _runs_code(node: ast.FunctionDef | ast.ClassDef, aliases: set[str]) -> str | None:
    """Why running the definition ``node`` (a Warp one, an enum or a type class) would run code of
    the module: its signature, a struct's body or an enum's methods' signatures (``definition_time``)."""
    if any(_decorator_kind(d, aliases) is not None for d in node.decorator_list):
        return definition_time.runs_code(node, aliases)
    for method in node.body if isinstance(node, ast.ClassDef) else []:
        if isinstance(method, ast.FunctionDef) and (why := definition_time.runs_code(method, aliases)):
            return f"`{node.name}.{why[1:]}"
    return None


def _special(name: str) -> bool:
    """A method Python or ``enum`` calls by itself (``__new__`` at the class's creation, ``__int__``
    and ``__str__`` when a build converts a member, ``_missing_`` on a lookup): its body would run."""
    return len(name) > 2 and name[0] == name[-1] == "_" and name.strip("_") != ""


def _plain_method(node: ast.FunctionDef) -> bool:
    """A method whose ``def`` runs nothing: builtin decorators only, literal defaults."""
    decorators_ok = all(
        isinstance(d, ast.Name) and d.id in ("property", "classmethod", "staticmethod")
        for d in node.decorator_list
    )
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    return decorators_ok and all(isinstance(d, ast.Constant) for d in defaults)


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@dataclass
class _Plan:
    tree: ast.Module
    aliases: set[str]
    library_names: dict[str, str]  # alias -> library module name
    definitions: dict[str, ast.stmt]
    constants: set[str]
    rebound: set[str]
    # name -> (level, module, imported name or None for the module itself), the module's imports
    # other than ``import <library>``: followed into the workspace when a build reaches the name
    imports: dict[str, tuple[int, str | None, str | None]] = field(default_factory=dict)
    # names bound once to a literal options dict (``WARP_DETERMINISM_OFF = {"deterministic": ...}``)
    option_dicts: set[str] = field(default_factory=set)
    # the library module of the text's one star import (``from warp.tests.unittest_utils import *``),
    # None when it has none, or another star import too; a name the text binds nowhere is that
    # module's (``_reads`` adds it to ``imports`` and ``star_names``; bound by ``_star_value``)
    star_library: str | None = None
    star_names: set[str] = field(default_factory=set)
    bound: frozenset[str] = frozenset()  # every name a top-level statement binds
    # definition -> what it reads (``_reads``), filled on first use
    reads: dict[str, tuple[list[str], _External] | str] = field(default_factory=dict)
    # names bound once to an attribute of an imported name (``MJ_MINVAL = mujoco.mjMINVAL``): built
    # when reached, the import followed; no constant of the contract path's whole-module build
    values: set[str] = field(default_factory=set)
    # module functions a definition calls at the top level (``X = make(1)``, ``hermetic_factory.product``)
    factories: set[str] = field(default_factory=set)
    # names bound by calling a module function the build cannot run -> why
    refused_products: dict[str, str] = field(default_factory=dict)
    # a `@wp.func` (or `@wp.struct`) defined more than once -> its definitions in order: all run, in
    # the module's order, as Warp registers them (a same signature replaces, another overloads)
    redefined: dict[str, list[ast.stmt]] = field(default_factory=dict)
    # a definition whose statement would run code of the module (``definition_time``) -> why
    runs_code: dict[str, str] = field(default_factory=dict)


def _imports(tree: ast.Module) -> dict[str, tuple[int, str | None, str | None]]:
    out: dict[str, tuple[int, str | None, str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = (0, a.name, None)
                elif a.name.split(".")[0] not in _LIBRARIES:
                    out[a.name.split(".")[0]] = (0, a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = (node.level, node.module, a.name)
    return out


# plans kept for the next decision or build that reaches the same text (a replay decides per
# kernel, over the same modules): at most this much source text (a syntax tree takes ~60x its text)
_PLANS_BUDGET = 4 * 1024 * 1024
_PLANS: OrderedDict[tuple[str, str], tuple[int, _Plan | str]] = OrderedDict()


def _plan_of(source: str, filename: str) -> _Plan:
    """``_plan`` of a text, kept for the next build or decision that follows an import into it
    (nothing changes a plan once made; the per-definition reads it fills are the text's); a
    text's refusal is kept too (newton's 1 MB solver modules set options from a name)."""
    key = (filename, hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
    found = _PLANS.get(key)
    if found is not None:
        _PLANS.move_to_end(key)
        if isinstance(found[1], str):
            raise NotHermetic(found[1])
        return found[1]
    kept: _Plan | str
    try:
        kept = _plan(source, filename)
        _no_module_settings(kept, literal_options=True)
    except NotHermetic as exc:
        kept = str(exc)
    _PLANS[key] = (len(source), kept)
    while len(_PLANS) > 1 and sum(size for size, _ in _PLANS.values()) > _PLANS_BUDGET:
        _PLANS.popitem(last=False)
    if isinstance(kept, str):
        raise NotHermetic(kept)
    return kept


def _plan(source: str, filename: str, tree: ast.Module | None = None) -> _Plan:
    tree = tree or ast.parse(source, filename)
    aliases = {"wp"} | {
        a.asname or a.name
        for n in tree.body
        if isinstance(n, ast.Import)
        for a in n.names
        if a.name == "warp"
    }
    library_names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _LIBRARIES:
                    library_names[a.asname or a.name] = a.name
    definitions: dict[str, ast.stmt] = {}
    constants: set[str] = set()
    rebound: set[str] = set()
    option_dicts: set[str] = set()
    values: set[str] = set()
    factories: set[str] = set()
    refused_products: dict[str, str] = {}
    redefined: dict[str, list[ast.stmt]] = {}
    runs_code: dict[str, str] = {}
    once = _bound_once(tree)  # a factory bound twice: which `def` a call runs is a matter of order
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in once}
    imports = _imports(tree)
    scope = _Scope(
        numpy=frozenset(k for k, v in library_names.items() if v == "numpy"),
        math=frozenset(k for k, v in library_names.items() if v == "math"),
        imported=frozenset(
            k
            for k, (level, module, _) in imports.items()
            if level or (module or "").split(".")[0] not in _LIBRARIES
        ),
        shadowed=frozenset(_top_level_names(tree)),
        tables=_tables(tree, once),
    )
    for node in tree.body:
        names = _bound_names(node)
        for name in names:
            if name in definitions or name in constants:
                if _helper_kind(node, aliases) is not None and _helper_kind(
                    definitions[name], aliases
                ) == _helper_kind(node, aliases):
                    redefined.setdefault(name, [definitions[name]]).append(node)
                else:
                    rebound.add(name)
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            kinds = [_decorator_kind(d, aliases) for d in node.decorator_list]
            if (
                (len(kinds) == 1 and kinds[0] is not None)
                or _is_enum_class(node, scope)
                or _is_type_class(node, aliases)
            ):
                definitions[node.name] = node
                why = _runs_code(node, aliases)
                if why is not None:
                    runs_code.setdefault(node.name, why)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and len(names) == 1:
            value = node.value
            if (
                value is not None
                and _is_constant_expr(value, aliases, constants, scope)
                and not _alias_of(value, scope)
            ) or (
                isinstance(value, ast.Dict)
                and names[0] in scope.tables
                and all(_is_constant_expr(v, aliases, constants, scope) for v in value.values)
            ):
                definitions[names[0]] = node
                constants.add(names[0])
            elif names[0] in once and _made_type(value, aliases, constants, scope):
                definitions[names[0]] = node  # `_mat_type = wp.types.matrix(shape=(N, 3), dtype=wp.float32)`
                constants.add(names[0])
                scope.made.add(names[0])
            elif isinstance(value, ast.Name) and value.id in definitions and value.id not in constants:
                definitions[names[0]] = node  # another name of a definition (mujoco's `vec10 = vec10f`)
            elif value is not None and _imported_attribute(value, scope):
                definitions[names[0]] = node  # `MJ_MINVAL = mujoco.mjMINVAL`
                values.add(names[0])
            elif (
                isinstance(value, ast.Dict)
                and (read := _option_names(value, aliases)) is not None
                and all(n in option_dicts or n in scope.imported for n in read)
            ):
                definitions[names[0]] = node  # options for `wp.set_module_options(NAME)`
                option_dicts.add(names[0])
            else:
                _product(node, names, functions, aliases, scope, definitions, factories, refused_products)
        elif isinstance(node, ast.Assign) and len(names) > 1:  # `f, k = make(1)`
            _product(node, names, functions, aliases, scope, definitions, factories, refused_products)
    plan = _Plan(tree, aliases, library_names, definitions, constants, rebound, imports)
    plan.option_dicts = option_dicts - rebound
    plan.values = values
    plan.factories = factories
    plan.refused_products = refused_products
    plan.redefined = {k: v for k, v in redefined.items() if k not in rebound}
    plan.runs_code = runs_code
    plan.star_library = _star_library(tree)
    plan.bound = scope.shadowed
    return plan


def _made_type(node: ast.expr | None, aliases: set[str], constants: set[str], scope: _Scope) -> bool:
    """``wp.types.matrix(shape=(NUM_NORMAL_BINS, 3), dtype=wp.float32)`` (``wp.types.vector``,
    ``wp.matrix``, ``wp.vector``): a type Warp makes of constants, a Warp dtype or ``float``/``int``/
    ``bool``, by keyword (positional arguments are ``_is_constant_expr``'s already)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    if node.func.attr not in _TYPE_CONSTRUCTORS or not (
        (isinstance(owner, ast.Name) and owner.id in aliases) or _warp_attr(owner, aliases) == "types"
    ):
        return False
    return all(
        k.arg in ("length", "shape", "dtype")
        and (
            _is_constant_expr(k.value, aliases, constants, scope)
            or _warp_attr(k.value, aliases) is not None
            or (isinstance(k.value, ast.Name) and k.value.id in _CASTS and k.value.id not in scope.shadowed)
        )
        for k in node.keywords
    ) and all(_is_constant_expr(a, aliases, constants, scope) for a in node.args)


def _tables(tree: ast.Module, once: set[str]) -> frozenset[str]:
    """The names the module binds once, at its top level, to a dict display of literal keys (``str``,
    ``int``) and values (numbers, strings, names, arithmetic: constants when the plan takes the
    assignment as one) and reads nowhere in its text but as ``NAME[...]`` (newton 1.8.0's
    ``_POLYHEDRON_BINS = {"icosahedron": 20, ...}``, ``NUM_NORMAL_BINS =
    _POLYHEDRON_BINS[NORMAL_BINNING_POLYHEDRON]``): no statement of the module stores into it, calls
    its methods, passes it on or rebinds it, so the entry a constant reads is the one the text writes."""
    candidates = {
        node.targets[0].id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id in once
        and isinstance(node.value, ast.Dict)
        and node.value.keys
        and all(isinstance(k, ast.Constant) and type(k.value) in (str, int) for k in node.value.keys)
    }
    if not candidates:
        return frozenset()
    # every occurrence of a candidate: its one binding, or the value of a subscript that loads
    read_whole: set[str] = set()
    subscripted: set[int] = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Load):
            subscripted.add(id(sub.value))
        elif isinstance(sub, ast.Global | ast.Nonlocal):
            read_whole.update(sub.names)
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Name) and sub.id in candidates:
            if isinstance(sub.ctx, ast.Load) and id(sub) not in subscripted:
                read_whole.add(sub.id)
        elif isinstance(sub, ast.arg) and sub.arg in candidates:
            read_whole.add(sub.arg)  # a parameter of its name: shadowed somewhere, kept simple
    stores = [
        sub.id
        for sub in ast.walk(tree)
        if isinstance(sub, ast.Name) and sub.id in candidates and not isinstance(sub.ctx, ast.Load)
    ]  # anywhere, a function's local of its name too: kept simple, refused
    twice = {name for name in stores if stores.count(name) != 1}
    return frozenset(candidates - read_whole - twice)


def _helper_kind(node: ast.stmt, aliases: set[str]) -> str | None:
    """``func`` or ``struct`` for a ``def``/``class`` decorated with ``@wp.func``/``@wp.struct`` alone."""
    if not isinstance(node, ast.FunctionDef | ast.ClassDef) or len(node.decorator_list) != 1:
        return None
    kind = _decorator_kind(node.decorator_list[0], aliases)
    if kind == "func" and isinstance(node, ast.FunctionDef):
        return kind
    return kind if kind == "struct" and isinstance(node, ast.ClassDef) else None


def _product(
    node: ast.Assign | ast.AnnAssign,
    names: list[str],
    functions: dict[str, ast.FunctionDef],
    aliases: set[str],
    scope: _Scope,
    definitions: dict[str, ast.stmt],
    factories: set[str],
    refused: dict[str, str],
) -> None:
    """``X = make(...)`` of a module function that only defines Warp definitions: ``X`` (and the
    factory's ``def``) become definitions a build runs (``hermetic_factory.product``); the reason
    is kept for a refusal."""
    try:
        factory = hermetic_factory.product(node, functions, aliases, scope.shadowed)
    except NotHermetic as exc:
        refused.update(dict.fromkeys(names, str(exc)))
        return
    if factory is not None:
        definitions[factory] = functions[factory]
        factories.add(factory)
        definitions.update(dict.fromkeys(names, node))


def _bound_once(tree: ast.Module) -> set[str]:
    """The names the module's top level binds exactly once (in a block of it too: an ``if``'s ``def``)."""
    counts: dict[str, int] = {}
    for statement in tree.body:
        names = list(_bound_names(statement))
        if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            todo: list[ast.AST] = list(ast.iter_child_nodes(statement))
            while todo:
                node = todo.pop()
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.append(node.name)
                    continue
                if isinstance(node, ast.stmt):
                    names += _bound_names(node)
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    names.append(node.id)
                todo.extend(ast.iter_child_nodes(node))
        for name in set(names):
            counts[name] = counts.get(name, 0) + 1
    return {name for name, n in counts.items() if n == 1}


def _top_level_names(tree: ast.Module) -> set[str]:
    """Every name the module's top level binds: definitions, imports, and any assignment target
    (``a, b = make()``, a loop's, a ``with``'s), not the names bound inside functions and classes."""
    out: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        out.update(_bound_names(node) if isinstance(node, ast.stmt) else ())
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _star_library(tree: ast.Module) -> str | None:
    """The module of the text's star import when there is exactly one and it is a library's
    (installed with the interpreter, never the workspace's): warp-lang's own tests take their
    helpers so (``from warp.tests.unittest_utils import *``)."""
    stars = [n for n in tree.body if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
    if len(stars) != 1 or stars[0].level or not stars[0].module:
        return None
    module = stars[0].module
    return module if module.split(".")[0] in hermetic_imports.FROM_LIBRARIES else None


def _reached(plan: _Plan, kernel_name: str, external: _External | None = None) -> set[str]:
    """The top-level names the kernel ``kernel_name`` needs (itself included)."""
    definitions = plan.definitions
    if kernel_name not in definitions or not isinstance(definitions[kernel_name], ast.FunctionDef):
        raise NotHermetic(
            f"`{kernel_name}` is not a module-level `@wp.kernel` def of this file (a factory, a closure "
            "or another decorator makes it at run time)"
        )
    kernel_def = definitions[kernel_name]
    assert isinstance(kernel_def, ast.FunctionDef)
    if _decorator_kind(kernel_def.decorator_list[0], plan.aliases) != "kernel":
        raise NotHermetic(f"`{kernel_name}` is not decorated with `@wp.kernel`")
    return _reach(plan, [kernel_name], external)


# a module's imported names the definitions reached read -> the attribute chains read on them
# (``fb.f(...)``: ("f",); the name itself: ())
_External = dict[str, set[tuple[str, ...]]]


def _reach(plan: _Plan, roots: list[str], external: _External | None = None) -> set[str]:
    """The top-level definitions and constants ``roots`` need (themselves included); the imported
    names they read go to ``external`` (refused when it is None)."""
    needed: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        if name in plan.rebound:
            raise NotHermetic(f"`{name}` is bound more than once at the top of the module")
        needed.add(name)
        reads = _reads(plan, name)
        if isinstance(reads, str):
            raise NotHermetic(reads)
        inside, outside = reads
        todo.extend(inside)
        for used, chains in outside.items():
            if external is None:
                raise NotHermetic(_runtime(name, used))
            external.setdefault(used, set()).update(chains)
    return needed


def _reads(plan: _Plan, name: str) -> tuple[list[str], _External] | str:
    """(the module's definitions the definition ``name`` reads, the imported names it reads with
    their attribute chains), or why it cannot be built; kept on the plan (a replay decides per
    kernel, over the same modules)."""
    found = plan.reads.get(name)
    if found is not None:
        return found
    if name in plan.runs_code:
        plan.reads[name] = plan.runs_code[name]
        return plan.runs_code[name]
    nodes = plan.redefined.get(name) or [plan.definitions[name]]
    free: set[str] = set()
    operators: set[str] = set()
    for node in nodes:
        local = _local_names(node)
        if name in plan.factories:  # the defs it makes and returns are its locals
            local |= hermetic_factory.nested_names(node)
        free |= _loads(node) - local
        operators |= _operator_names(node) - local

    def chains(used: str) -> set[tuple[str, ...]]:
        return set().union(*(_chains(node, used) for node in nodes))

    inside: list[str] = []
    outside: _External = {}
    result: tuple[list[str], _External] | str = (inside, outside)
    for used in sorted(free):
        if used in plan.definitions:
            inside.append(used)
        elif used in plan.library_names or used in plan.aliases or hasattr(builtins, used):
            continue
        elif used in plan.imports and used not in plan.rebound:
            outside[used] = chains(used)
        elif plan.star_library is not None and used not in plan.bound:
            plan.imports[used] = (0, plan.star_library, used)  # the star import's, as Python binds it
            plan.star_names.add(used)
            outside[used] = chains(used)
        elif used in plan.refused_products:
            result = (
                f"`{name}` reads `{used}`, which the module binds by calling a function the build does not "
                f"run: {plan.refused_products[used]}"
            )
            break
        else:
            result = _runtime(name, used)
            break
    else:
        # an operator on a struct calls the function of its name in the kernel's module (Warp's
        # codegen resolves `a + b` to `add`): read though the text never names it
        for used in sorted(operators):
            if used in plan.definitions and used not in inside:
                inside.append(used)
            elif used in plan.imports and used not in plan.rebound:
                outside.setdefault(used, set()).add(())
    plan.reads[name] = result
    return result


# the operators whose function Warp looks up by name (warp/_src/codegen.py ``builtin_operators``)
_OPERATOR_FUNCTIONS: dict[type[ast.AST], str] = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.MatMult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Pow: "pow",
    ast.Mod: "mod",
    ast.UAdd: "pos",
    ast.USub: "neg",
    ast.Not: "unot",
    ast.BitAnd: "bit_and",
    ast.BitOr: "bit_or",
    ast.BitXor: "bit_xor",
    ast.Invert: "invert",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
}


def _operator_names(node: ast.AST) -> set[str]:
    return {
        name
        for n in ast.walk(node)
        if isinstance(n, ast.BinOp | ast.UnaryOp | ast.AugAssign)
        and (name := _OPERATOR_FUNCTIONS.get(type(n.op))) is not None
    }


def _runtime(name: str, used: str) -> str:
    return (
        f"`{name}` reads `{used}`, which the module binds at run time (not a definition or a "
        "constant of its own text)"
    )


def _execute(
    plan: _Plan,
    source: str,
    filename: str,
    needed: set[str],
    module_name: str,
    own: Any = None,
    graph: _Graph | None = None,
    settings: bool = False,
    unit: _Unit | None = None,
) -> types.ModuleType:
    """The namespace ``module_name`` built from the statements of ``needed``; with ``graph``, the
    workspace modules the names reach are built first, each into its own namespace, and bound
    under the names the module imports them as."""
    if graph is not None and unit is None:
        graph.build_imports()
    picked = {i for i, n in enumerate(plan.tree.body) if any(b in needed for b in _bound_names(n))}
    picked = {i for i in picked if not isinstance(plan.tree.body[i], ast.Import | ast.ImportFrom)}
    if settings:  # the module's own literal options, for its own (fresh) Warp module
        picked |= {i for i, n in enumerate(plan.tree.body) if _literal_settings(n, plan) is not None}
    if own is not None:
        picked |= own.statements
    first = list(own.future) if own is not None else []
    body = [plan.tree.body[i] for i in first] + [
        n for i, n in enumerate(plan.tree.body) if i in picked and i not in first
    ]
    namespace = types.ModuleType(module_name)
    namespace.__file__ = filename
    namespace.__dict__.update({k: importlib.import_module(v) for k, v in plan.library_names.items()})
    for alias in plan.aliases:
        namespace.__dict__[alias] = importlib.import_module("warp")
    # Warp reads a kernel's source through inspect (linecache): the text parsed here, not the
    # file as it may be now
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    sys.modules[module_name] = namespace  # Warp's module registry keys on the Python module
    try:
        if graph is not None:
            graph.bind(unit or graph.root, namespace)
        if own is not None:
            for local, (module, attr) in own.imports.items():
                namespace.__dict__[local] = _library_value(module, attr)
        exec(
            compile(ast.Module(body=body, type_ignores=[]), filename, "exec", dont_inherit=True),
            namespace.__dict__,
        )
        if graph is not None and unit is None:  # a workspace module importing back from this one
            graph.root.namespace = namespace
            for other in graph.units.values():
                if other is not graph.root and other.namespace is not None:
                    graph.bind(other, other.namespace)
    except Exception as exc:
        del sys.modules[module_name]
        raise NotHermetic(f"building from the source failed: {type(exc).__name__}: {exc}") from exc
    return namespace


@dataclass(frozen=True)
class _Target:
    """What an imported name is bound to: ``name`` of the module ``unit`` (None: the module)."""

    unit: str
    name: str | None
    library: str | None = None  # the module of a library value (``from typing import Any``)
    star: bool = False  # bound by the library module's star import (``_star_value``)
    installed: str | None = None  # ``library`` is installed outside the workspace: its top's origin


@dataclass
class _Unit:
    """A module of a build: the kernel's (``found`` None) or a workspace module it imports from."""

    found: Found | None
    filename: str
    source: str
    plan: _Plan | None  # None: a namespace package (a folder)
    needed: set[str] = field(default_factory=set)
    links: dict[str, _Target] = field(default_factory=dict)  # name -> what it is bound to
    namespace: types.ModuleType | None = None

    @property
    def dotted(self) -> str:
        return self.found.dotted if self.found is not None else Path(self.filename).stem


class _Graph:
    """The workspace modules a build follows imports into, from their texts (``hermetic_imports``):
    what each must define (``needed``) and bind (``links``); ``NotHermetic`` with the reason when
    a reached name is not a definition, constant or import a text can give."""

    def __init__(self, sources: Sources, plan: _Plan, filename: str, source: str) -> None:
        self.sources = sources
        self.root_key = os.path.realpath(filename)
        self.root = _Unit(None, filename, source, plan)
        self.units: dict[str, _Unit] = {self.root_key: self.root}

    def need(self, unit: _Unit, names: list[str], depth: int = 0) -> None:
        """``unit`` defines ``names`` and what they reach, in it and through its imports."""
        assert unit.plan is not None
        fresh = [n for n in names if n not in unit.needed]
        if not fresh:
            return
        external: _External = {}
        try:
            unit.needed |= _reach(unit.plan, fresh, external)
        except NotHermetic as exc:
            if unit is self.root:
                raise
            raise NotHermetic(f"in the workspace module `{unit.dotted}`: {exc}") from exc
        self.follow(unit, external, depth)

    def follow(self, unit: _Unit, external: _External, depth: int = 0) -> None:
        for local in sorted(external):
            target = self._binding(unit, local, depth + 1)
            unit.links[local] = target
            for chain in sorted(external[local]):
                self._use(unit, local, target, chain, depth + 1)

    def _use(self, unit: _Unit, local: str, target: _Target, chain: tuple[str, ...], depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise NotHermetic(f"`{local}`: a chain of more than {_MAX_DEPTH} imports")
        if target.library is not None:
            return  # bound from the library itself when built
        owner = self.units[target.unit]
        if target.name is not None:
            self.need(owner, [target.name], depth)
            return
        if not chain:
            raise NotHermetic(
                f"`{unit.dotted}` uses the module `{owner.dotted}` itself (as `{local}`), not a name of it"
            )
        inner = self._attribute(owner, chain[0], depth + 1)
        owner.links[chain[0]] = inner
        self._use(owner, f"{local}.{chain[0]}", inner, chain[1:], depth + 1)

    def _binding(self, unit: _Unit, local: str, depth: int) -> _Target:
        """What ``unit``'s import of ``local`` binds it to."""
        assert unit.plan is not None
        level, module, name = unit.plan.imports[local]
        spelled = "." * level + (module or "")
        found = hermetic_imports.find(
            self.sources, unit.found.path if unit.found else unit.filename, level, module
        )
        if isinstance(found, str):
            return _Target("", name, library=found, star=local in unit.plan.star_names)
        if isinstance(found, Installed):
            return _Target("", name, library=found.name, installed=found.origin)
        if found is None:
            where = (
                "found neither in the workspace nor installed outside it"
                if self.sources.trust_installed
                else "not a module of the workspace (an installed package's code would run at import)"
            )
            raise NotHermetic(f"`{unit.dotted}` reads `{local}`, imported from `{spelled}`, which is {where}")
        owner = self._unit(found)
        if name is None:
            return _Target(found.path, None)
        return self._attribute(owner, name, depth)

    def _attribute(self, owner: _Unit, name: str, depth: int) -> _Target:
        """What the name ``name`` of the module ``owner`` is."""
        if depth > _MAX_DEPTH:
            raise NotHermetic(f"`{owner.dotted}.{name}`: a chain of more than {_MAX_DEPTH} imports")
        key = owner.found.path if owner.found else self.root_key
        plan = owner.plan
        if plan is not None and name in plan.rebound:
            raise NotHermetic(f"`{name}` is bound more than once at the top of `{owner.dotted}`")
        if plan is not None and name in plan.definitions:
            return _Target(key, name)
        if plan is not None and name in plan.imports:
            return self._binding(owner, name, depth + 1)
        sub = hermetic_imports.submodule(self.sources, owner.found, name) if owner.found else None
        if sub is not None:
            self._unit(sub)
            return _Target(sub.path, None)
        raise NotHermetic(
            f"`{name}` of the workspace module `{owner.dotted}` is not a `@wp.func`, `@wp.struct`, constant "
            "or import of its text (it is bound at run time, if at all)"
        )

    def _unit(self, found: Found) -> _Unit:
        unit = self.units.get(found.path)
        if unit is not None:
            return unit
        if found.folder:
            unit = _Unit(found, found.path, "", None)
        else:
            source = self.sources.text(found)
            try:
                plan = _plan_of(source, found.path)
            except NotHermetic as exc:
                raise NotHermetic(f"the workspace module `{found.dotted}`: {exc}") from exc
            except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
                raise NotHermetic(
                    f"the workspace module `{found.dotted}` does not parse ({type(exc).__name__})"
                ) from exc
            unit = _Unit(found, found.path, source, plan)
        self.units[found.path] = unit
        return unit

    def unbuilt(self) -> _Graph:
        """The same analysis, nothing of it built (a graph is built once)."""
        fresh = _Graph(self.sources, self.root.plan, self.root.filename, self.root.source)  # type: ignore[arg-type]
        fresh.units = {
            k: _Unit(u.found, u.filename, u.source, u.plan, set(u.needed), dict(u.links))
            for k, u in self.units.items()
        }
        fresh.root = fresh.units[self.root_key]
        return fresh

    @property
    def imported(self) -> tuple[str, ...]:
        return tuple(k for k in self.units if k != self.root_key)

    def build_imports(self) -> None:
        """Every workspace module of the graph, built into its own fresh namespace (dependencies
        first; the names of a cycle bound once all are built: Warp reads a function's globals when
        it generates code, not before)."""
        done: set[str] = set()
        order: list[str] = []

        def visit(key: str) -> None:
            if key in done:
                return
            done.add(key)
            for target in self.units[key].links.values():
                if target.library is None:
                    visit(target.unit)
            order.append(key)

        for key in self.units:
            visit(key)
        for key in order:
            unit = self.units[key]
            if unit is not self.root and unit.namespace is None:
                unit.namespace = self._build(unit)
        for unit in self.units.values():
            if unit is not self.root and unit.namespace is not None:
                self.bind(unit, unit.namespace)

    def _build(self, unit: _Unit) -> types.ModuleType:
        assert unit.found is not None
        body = [] if unit.plan is None else [n for n in unit.plan.tree.body if _binds(n, unit.needed)]
        digest = hashlib.sha256(
            (unit.found.path + ast.dump(ast.Module(body=body, type_ignores=[]))).encode()
        ).hexdigest()[:16]
        name = f"_wh_hermetic_{unit.dotted.replace('.', '_')}_{digest}"
        if unit.plan is None:
            namespace = types.ModuleType(name)
            sys.modules[name] = namespace
            return namespace
        try:
            return _execute(unit.plan, unit.source, unit.filename, unit.needed, name, graph=self, unit=unit)
        except NotHermetic as exc:
            raise NotHermetic(f"the workspace module `{unit.dotted}`: {exc}") from exc

    def bind(self, unit: _Unit, namespace: types.ModuleType) -> None:
        """``unit``'s imported names in ``namespace``, those whose module is built already."""
        for local, target in unit.links.items():
            if target.library is not None:
                try:
                    if target.installed is not None:
                        namespace.__dict__[local] = _installed_value(
                            target.library, target.name, target.installed, self.sources.bound
                        )
                    elif target.star:
                        _bind_star(namespace, local, target.library)
                    else:
                        namespace.__dict__[local] = _library_value(target.library, target.name)
                except (ImportError, AttributeError) as exc:
                    raise NotHermetic(f"`{local}` of the library `{target.library}`: {exc}") from exc
                continue
            owner = self.units[target.unit].namespace
            if owner is None:
                continue
            if target.name is None:
                namespace.__dict__[local] = owner
            elif target.name in owner.__dict__:
                namespace.__dict__[local] = owner.__dict__[target.name]


def _binds(node: ast.stmt, needed: set[str]) -> bool:
    return not isinstance(node, ast.Import | ast.ImportFrom) and any(b in needed for b in _bound_names(node))


def _chains(node: ast.AST, name: str) -> set[tuple[str, ...]]:
    """The attribute chains ``node`` reads on the name ``name`` (``name.a.b``: ("a", "b"))."""
    out: set[tuple[str, ...]] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.Attribute):
            chain: list[str] = []
            inner: ast.expr = n
            while isinstance(inner, ast.Attribute):
                chain.insert(0, inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == name:
                out.add(tuple(chain))
                return
        if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load):
            out.add(())
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return out


def _library_value(module: str, attr: str | None) -> Any:
    """``module`` (or its ``attr``), imported from the interpreter's own folders only: a file of
    the workspace named like a standard module (``fractions.py`` next to the kernel) is not it."""
    loaded = _library_module(module)
    if attr is None:
        return loaded
    if hasattr(loaded, attr):
        return getattr(loaded, attr)
    return _library_module(f"{module}.{attr}")


def _installed_value(module: str, attr: str | None, origin: str, bound: str) -> Any:
    """``module`` (or its ``attr``) of the user's environment, imported from the origin the
    decision found (``hermetic_imports.installed``) with the workspace's folders off ``sys.path``;
    ``NotHermetic`` when what loads is another file, or a submodule inside the workspace."""
    loaded = _installed_module(module, origin, bound)
    if attr is None:
        return loaded
    if hasattr(loaded, attr):
        return getattr(loaded, attr)
    return _installed_module(f"{module}.{attr}", origin, bound)


def _installed_module(name: str, origin: str, bound: str) -> types.ModuleType:
    top = name.split(".")[0]
    saved = list(sys.path)
    sys.path[:] = hermetic_imports.outside_path(bound)
    try:
        first = sys.modules.get(top) or importlib.import_module(top)
        if _file_of(first) != origin:
            raise NotHermetic(f"`{top}` loaded from {_file_of(first)}, not {origin} as decided")
        loaded = importlib.import_module(name)
    finally:
        sys.path[:] = saved
    where = _file_of(loaded)
    if hermetic_imports.within(bound, where):
        raise NotHermetic(f"`{name}` loaded from {where}, inside the workspace")
    return loaded


def _file_of(module: types.ModuleType) -> str:
    """The real path of the file a module was loaded from (``built-in`` for one compiled in)."""
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return os.path.realpath(file)
    origin = getattr(getattr(module, "__spec__", None), "origin", None)
    return "built-in" if origin == "built-in" else f"no file ({origin})"


def _bind_star(namespace: types.ModuleType, name: str, module: str) -> None:
    """``name`` in ``namespace`` as ``from module import *`` binds it (a name of the module's
    ``__all__``, or a public name when it has none), or left unbound as the import leaves it: Warp's
    codegen then resolves a kernel's bare name among its builtins (warp-lang's tests call
    ``expect_eq`` so), and a name neither binds fails Warp's codegen, as after the import."""
    loaded = _library_module(module)
    public = getattr(loaded, "__all__", None)
    exported = name in public if public is not None else not name.startswith("_")
    if exported and hasattr(loaded, name):
        namespace.__dict__[name] = getattr(loaded, name)


def _library_module(name: str) -> types.ModuleType:
    found = sys.modules.get(name)
    if found is not None:
        return found
    roots = tuple({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    saved = list(sys.path)
    sys.path[:] = [
        p
        for p in saved
        if p and (os.path.realpath(p).startswith(roots) or "site-packages" in p or "dist-packages" in p)
    ]
    try:
        return importlib.import_module(name)
    finally:
        sys.path[:] = saved


def build(
    source: str,
    filename: str,
    kernel_name: str,
    workspace: Path | str | None = None,
    texts: Mapping[str, str] | None = None,
    closure: Mapping[str, Any] | None = None,
) -> HermeticKernel:
    """The kernel ``kernel_name`` of the module text ``source`` (its file ``filename``), built
    in a fresh namespace from the statements it reaches, the workspace modules it imports from
    each in its own (``workspace``: where workspace code may be read, else the folder the module
    is imported from; ``texts``: the only texts of them to use, by real path, see ``imported``);
    ``closure``: the capture's record of a kernel made inside a function (``hermetic_factory``);
    ``NotHermetic`` when it cannot be."""
    sources = Sources.for_file(filename, workspace, texts)
    graph = _kernel_graph(
        source, filename, kernel_name, sources, _factory_plan(source, filename, kernel_name, closure, sources)
    )
    plan, needed = graph.root.plan, graph.root.needed
    assert plan is not None
    body = [n for n in plan.tree.body if _binds(n, needed) or _literal_settings(n, plan) is not None]
    digest = hashlib.sha256(ast.dump(ast.Module(body=body, type_ignores=[])).encode()).hexdigest()[:16]
    module_name = f"_wh_hermetic_{kernel_name}_{digest}"
    try:
        namespace = _execute(plan, source, filename, needed, module_name, graph=graph, settings=True)
    except NotHermetic as exc:
        raise NotHermetic(f"`{kernel_name}`: {exc}") from exc
    kernel = namespace.__dict__.get(kernel_name)
    if not isinstance(kernel, importlib.import_module("warp").Kernel):
        raise NotHermetic(f"`{kernel_name}` did not build into a Warp kernel")
    order = tuple(b for n in body for b in _bound_names(n) if b in needed)
    return HermeticKernel(kernel=kernel, module_name=module_name, statements=order, imported=graph.imported)


def _factory_plan(
    source: str, filename: str, kernel_name: str, closure: Mapping[str, Any] | None, sources: Sources
) -> _Plan:
    """The module's plan (``_plan_of``); with the capture's ``closure`` record of a kernel made
    inside a function, the plan of its text with that kernel hoisted to the top level, its free
    names bound from the record (``hermetic_factory.hoisted``; what its factory's code reads of the
    modules digested from ``sources``, which keep the texts read for the worker)."""
    plan = _plan_of(source, filename)
    if not closure:
        return plan
    if "<locals>" not in str(closure.get("qualname") or ""):
        return _chosen_definition(plan, source, filename, kernel_name, closure)

    def reads(tree: ast.Module, qualname: str, definition: tuple[int, int] | None) -> str:
        try:
            return factory_reads.reads_digest(tree, qualname, filename, sources, definition)
        except factory_reads.Unreadable as exc:
            raise NotHermetic(str(exc)) from exc

    tree, names = hermetic_factory.hoisted(plan.tree, kernel_name, dict(closure), plan.aliases, reads)
    hoisted = _plan(source, filename, tree)
    _no_module_settings(hoisted, literal_options=True)
    if kernel_name not in hoisted.definitions:
        raise NotHermetic(
            f"`{closure.get('qualname')}` is not decorated with `@wp.kernel` alone, with literal keywords"
        )
    nodes = {n: node for node in tree.body for n in _bound_names(node) if n in names or n == kernel_name}
    for name, what in names.items():
        if what == "import":
            continue  # in the plan's imports: followed into the workspace module's text
        hoisted.definitions[name] = nodes[name]  # `T = wp.float32` too: a Warp type the kernel reads
        if what == "constant":
            hoisted.constants.add(name)
    return hoisted


def _chosen_definition(
    plan: _Plan, source: str, filename: str, kernel_name: str, record: Mapping[str, Any]
) -> _Plan:
    """The plan of the module's text with only the top-level ``def kernel_name`` the launch ran, of
    the several the module defines under that name (warp-lang's ``global_kernel``, redefined after
    ``global_kernel_1 = global_kernel``: each launch ran the one its kernel object was made from); the
    capture recorded which (``identity.definition_of``: the ``i``-th of ``n``). ``NotHermetic`` when
    the record says none, or the saved text no longer defines ``n`` (which one ran is then unknown)."""
    definition = definition_of(record)
    if record.get("qualname") != kernel_name or definition is None:
        raise NotHermetic(f"the capture's record of `{kernel_name}` names no definition of it")
    defs = [n for n in plan.tree.body if isinstance(n, ast.FunctionDef) and n.name == kernel_name]
    if len(defs) != definition[1]:
        raise NotHermetic(
            f"`{kernel_name}` is defined {len(defs)} times at the top of the module, {definition[1]} when "
            "captured: which one the launch ran is not known (capture again)"
        )
    chosen = defs[definition[0]]
    tree = ast.Module([n for n in plan.tree.body if n is chosen or n not in defs], [])
    chosen_plan = _plan(source, filename, copy.deepcopy(tree))
    _no_module_settings(chosen_plan, literal_options=True)
    return chosen_plan


def _kernel_graph(source: str, filename: str, kernel_name: str, sources: Sources, plan: _Plan) -> _Graph:
    graph = _Graph(sources, plan, filename, source)
    external: _External = {}
    graph.root.needed = _reached(plan, kernel_name, external) | _settings_needs(plan, external)
    graph.follow(graph.root, external)
    return graph


def kernel_texts(
    source: str,
    filename: str,
    kernel_name: str,
    workspace: Path | str | None = None,
    closure: Mapping[str, Any] | None = None,
) -> tuple[str | None, dict[str, str]]:
    """(why the kernel cannot be built from texts alone, None: it can; the texts of the workspace
    modules the decision read, by real path, and the origins of the installed modules it may
    import, ``Sources.decided``: what the builder is given, so it builds from exactly what was
    decided on). Text only: no Warp, nothing imported or executed."""
    graph: _Graph | None = None
    try:
        sources = Sources.for_file(filename, workspace, None)
        plan = _factory_plan(source, filename, kernel_name, closure, sources)
        graph = _kernel_graph(source, filename, kernel_name, sources, plan)
    except NotHermetic as exc:
        return str(exc), {}
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"its text does not parse ({type(exc).__name__})", {}
    return None, graph.sources.decided()


def build_module(
    source: str,
    filename: str,
    module_name: str,
    workspace: Path | str | None = None,
    texts: Mapping[str, str] | None = None,
) -> types.ModuleType:
    """A module named ``module_name`` holding every kernel of the module text ``source``, the
    ``@wp.func``s and ``@wp.struct``s they reach and the module's constants, and the module's own
    contracts with what they reach (``hermetic_contract``), built without running anything else
    of it (what a sibling contract module imports in its place); the workspace modules they
    import from are built from their texts, each in its own namespace (``build``). ``NotHermetic``
    when a kernel or a contract of the text cannot be built so (a kernel made inside a function
    or by a call, one reading a name bound at run time, a contract reaching code that runs at
    import)."""
    graph, own = _analysed(source, filename, workspace, texts)
    plan = graph.root.plan
    assert plan is not None
    return _execute(plan, source, filename, set(graph.root.needed), module_name, own, graph)


# the last texts analysed (``why_not`` and ``build_module`` of one job read the same text: the
# worker decides, then builds); nothing here is changed by a build (``compile`` leaves the tree).
# An entry holds the imported modules' texts it was made from: it is used only while they are
# the texts the caller would read now.
_ANALYSED: dict[tuple[str, str, str], tuple[_Graph, Any]] = {}


def _analysed(
    source: str, filename: str, workspace: Path | str | None = None, texts: Mapping[str, str] | None = None
) -> tuple[_Graph, Any]:
    """(the module's graph: its own plan and the top-level names the build executes, the
    workspace modules it imports from; the module's own contracts' plan or None); ``NotHermetic``
    (not cached) when the module cannot be built from its text."""
    sources = Sources.for_file(filename, workspace, texts)
    key = (filename, sources.bound, hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest())
    found = _ANALYSED.get(key)
    if found is not None and _same_texts(found[0], sources):
        return found[0].unbuilt(), found[1]
    plan = _plan(source, filename)
    graph = _Graph(sources, plan, filename, source)
    external: _External = {}
    needed = _module_needs(plan, external)
    own = _own_contracts(plan)
    if own is not None:
        needed |= _reach(plan, sorted(own.kernel_names), external)
    graph.root.needed = needed
    graph.follow(graph.root, external)
    if len(_ANALYSED) >= 4:
        _ANALYSED.clear()
    _ANALYSED[key] = (graph, own)
    return graph, own


def _same_texts(graph: _Graph, sources: Sources) -> bool:
    for path, text in graph.sources.read.items():
        if sources.texts is not None:
            now = sources.texts.get(path)
        else:
            try:
                now = hermetic_imports.read_text(path)
            except (OSError, ValueError):
                return False
        if now != text:
            return False
    return True


def _own_contracts(plan: _Plan) -> Any:
    """The module's own contract statements and what they reach (``hermetic_contract.ContractPlan``),
    None when it defines none at its top level."""
    kernel_defs = set(plan.definitions) - plan.rebound - plan.values
    return hermetic_contract.plan_contracts(plan.tree, kernel_defs, plan.rebound)


def _module_kernels(plan: _Plan) -> list[str]:
    return [
        n.name
        for n in plan.tree.body
        if isinstance(n, ast.FunctionDef)
        and any(_decorator_kind(d, plan.aliases) == "kernel" for d in n.decorator_list)
    ]


def _module_needs(plan: _Plan, external: _External | None = None) -> set[str]:
    """The top-level names a hermetic build of the whole module executes; ``NotHermetic`` when
    a kernel of the module cannot be built from its text."""
    for node in ast.walk(plan.tree):
        if isinstance(node, ast.FunctionDef) and node not in plan.tree.body:
            if any(_decorator_kind(d, plan.aliases) == "kernel" for d in node.decorator_list):
                raise NotHermetic(f"kernel `{node.name}` is made inside a function, at run time (a factory)")
        if isinstance(node, ast.Call) and _warp_attr(node.func, plan.aliases) in ("kernel", "Kernel"):
            raise NotHermetic("a kernel is made by a call to `wp.kernel` at run time")
    kernels = _module_kernels(plan)
    if not kernels:
        raise NotHermetic("the module's text defines no module-level `@wp.kernel`")
    needed = set(plan.constants - plan.rebound)
    for name in kernels:
        needed |= _reached(plan, name, external)
    return needed


def why_not(
    source: str,
    filename: str,
    module_name: str,
    contracts: list[tuple[str, str]],
    workspace: Path | str | None = None,
    texts: Mapping[str, str] | None = None,
) -> str | None:
    """Why the module text ``source`` cannot be checked hermetically (None: it can), from text
    alone: no Warp, nothing executed. ``contracts``: (file name, text) of its sibling contract
    modules. The supervisor and the worker both decide with this, on the same text: the worker
    builds the module (``build_module``) exactly when it returns None, and the supervisor, which
    runs no workspace code, reports every other verdict as not hermetic (WHD069). The workspace
    modules the kernels import from are followed from their texts (``build``)."""
    try:
        graph, own = _analysed(source, filename, workspace, texts)
        assert graph.root.plan is not None
        _no_module_settings(graph.root.plan)
        needed = graph.root.needed
    except NotHermetic as exc:
        return str(exc)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"its text does not parse ({type(exc).__name__})"
    if not contracts and own is None:
        return (
            "its contracts are not in a sibling `<module>_contract.py`, nor top-level `Contract(...)` or "
            "`@define` statements of its text: they are made when its top-level code runs"
        )
    short = module_name.rsplit(".", 1)[-1]
    for sibling, text in contracts:
        try:
            tree = ast.parse(text, sibling)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"its contract module `{sibling}` does not parse ({type(exc).__name__})"
        plain = {
            a.asname or a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import)
            for a in n.names
            if a.name == module_name
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in plain
                and node.attr not in needed
            ):
                return (
                    f"its contract module `{sibling}` reads `{node.attr}` of the module, which is not a "
                    "kernel, `@wp.func`, `@wp.struct` or constant a hermetic build makes"
                )
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.module not in (module_name, short) and not (node.level and node.module == short):
                continue
            for alias in node.names:
                if alias.name not in needed:
                    return (
                        f"its contract module `{sibling}` imports `{alias.name}`, which is not a kernel, "
                        "`@wp.func`, `@wp.struct` or constant a hermetic build makes"
                    )
    return None


def _warp_chain(node: ast.expr, aliases: set[str]) -> bool:
    """``wp.A.B`` (an attribute of Warp: ``wp.DeterministicMode.NOT_GUARANTEED``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in aliases


def _option_names(node: ast.expr, aliases: set[str]) -> list[str] | None:
    """The names a literal options dict reads (``{"enable_backward": False, **OTHER}``: ["OTHER"];
    a bare name: itself), None when ``node`` is not one: string keys, values literals or attributes of
    Warp, ``**`` of names only."""
    if isinstance(node, ast.Name):
        return [node.id]
    if not isinstance(node, ast.Dict):
        return None
    names: list[str] = []
    for key, value in zip(node.keys, node.values, strict=True):
        if key is None:
            if not isinstance(value, ast.Name):
                return None
            names.append(value.id)
        elif not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        elif not (isinstance(value, ast.Constant) or _warp_chain(value, aliases)):
            return None
    return names


def _literal_settings(node: ast.stmt, plan: _Plan) -> list[str] | None:
    """The option dicts ``node`` reads when it is ``wp.set_module_options(OPTIONS)`` of a literal
    options dict, or of the name of one the module binds once (``WARP_DETERMINISM_OFF = {...}``) or
    imports from a workspace module (newton's steel solver); None when it is not (a statement a
    build of the captured path runs: it sets the options of the fresh namespace's own module)."""
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    if _warp_attr(call.func, plan.aliases) != "set_module_options" or call.keywords or len(call.args) != 1:
        return None
    names = _option_names(call.args[0], plan.aliases)
    if names is None or not all(n in plan.option_dicts or n in plan.imports for n in names):
        return None
    return names


def _settings_needs(plan: _Plan, external: _External) -> set[str]:
    """The module's own option dicts its literal settings read (the imported ones go to ``external``:
    followed into their module, which must bind them as option dicts too)."""
    needed: set[str] = set()
    for node in plan.tree.body:
        for name in _literal_settings(node, plan) or []:
            if name in plan.option_dicts:
                needed |= _reach(plan, [name], external)
            else:
                external.setdefault(name, set()).add(())
    return needed


def _no_module_settings(plan: _Plan, literal_options: bool = False) -> None:
    """A top-level ``wp.set_module_options(...)`` or ``wp.config.X = ...`` changes how the kernels
    build: a hermetic build runs no top-level call, so such a module is imported instead.
    ``literal_options``: a top-level ``wp.set_module_options({...})`` of literals is allowed (the
    captured path's ``build`` runs it in the fresh namespace; an imported module's options do not
    apply to the kernel's module, where its funcs are compiled)."""
    for node in plan.tree.body:
        if literal_options and _literal_settings(node, plan) is not None:
            continue
        for sub in _runs_at_import(node):
            if isinstance(sub, ast.Call) and _warp_attr(sub.func, plan.aliases) == "set_module_options":
                raise NotHermetic(
                    "its top level calls `wp.set_module_options`, which a hermetic build does not run"
                )
            if (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Store)
                and _warp_attr(sub.value, plan.aliases) == "config"
            ):
                raise NotHermetic(
                    f"its top level sets `wp.config.{sub.attr}`, which a hermetic build does not run"
                )


def _runs_at_import(node: ast.stmt) -> list[ast.AST]:
    """The nodes of the top-level statement ``node`` that run when the module is imported: all
    of it, but of a ``def`` only its decorators, defaults and annotations (its body runs when
    called; newton's ``solver.py`` sets a module's options inside a function)."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return list(ast.walk(node))
    heads: list[ast.AST] = [*node.decorator_list, node.args]
    if node.returns is not None:
        heads.append(node.returns)
    return [sub for head in heads for sub in ast.walk(head)]


def _local_names(node: ast.stmt) -> set[str]:
    """The parameters of ``node`` and the names bound inside it (loop variables, locals)."""
    out: set[str] = set()
    if isinstance(node, ast.FunctionDef):
        out |= {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out.add(sub.id)
        elif isinstance(sub, ast.arg):  # a parameter of a method or lambda inside it
            out.add(sub.arg)
    return out
