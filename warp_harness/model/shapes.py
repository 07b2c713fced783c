"""Symbolic shapes and launch dims on the host, in the spellings real code uses.

What the launch rules need to compare a launch's ``dim`` with the arrays the launch passes:

- the rank of a dim expression (`ShapeEnv.dim_rank`): literal tuples, folded constants, ``a.shape``,
  ``a.shape[:2]``, ``a.shape[0]``, ``len(a)``, ``n * m`` of integers, locals (also unpacked:
  ``nx, ny = img.shape``) and ``self.`` fields;
- the rank of an array expression (`ShapeEnv.array_rank`): allocations in the launching scope
  (``wp.zeros((n, m))``, ``wp.empty_like(x)``, ``wp.array(np_arr)``, numpy allocations), ``self.`` fields
  allocated once in the class, and what the caller knows (``array_ranks``: the kernel parameter an array is
  passed to; Warp raises at launch when an array's rank differs from its parameter's);
- the value of a dim component and of an array's extent along an axis, symbolically (`Extent`: a linear
  form over opaque symbols plus a bounded slack, which is what a dim rounded up to whole blocks is:
  ``((n + 255) // 256) * 256`` is ``n`` plus 0..255). An array passed to the launch always has the extent
  ``a.shape[k]`` *at the launch*; one allocated in the scope (or in the class) also has its allocation's;
- per axis, what an argument holds at a launch (`ShapeEnv.known_extent`: ``wp.zeros((1, n))`` holds 1 along
  axis 0, ``wp.zeros(shape=(nworld, 0))`` 0 along axis 1, ``wp.array(np.array([[0.0, 0.0, -9.81]]),
  dtype=wp.vec3)`` 1 along axis 0: nested literal data is followed unless a local on the way is changed in
  place) and which array a dim component is read off (`ShapeEnv.dim_source`: ``dim=a.shape``, ``len(a)``);
- `compare`: whether a dim covers an extent exactly, more, possibly more (unless a divisibility holds), or
  never more.

Integers are what this module calls scalars: a dim is either an integer or a tuple of integers (Warp
raises on anything else), so an operand of ``+``, ``-``, ``//``, ``%`` next to an integer is an integer too
(a tuple there would raise first), while ``*`` repeats a tuple and needs both sides known.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from warp_harness.model.constants import Linear, Value, fold
from warp_harness.model.imports import ImportMap
from warp_harness.model.kernel import KernelDef
from warp_harness.model.launches import LaunchSite, allocation, scope_aliases, scope_nodes
from warp_harness.model.types import Array
from warp_harness.model.walk import walk

SCALAR = 0  # the kind of an integer; a positive kind is the length of a tuple

_MAX_DEPTH = 24
# numpy allocators: the shape is the first argument (or `shape=`)
_NUMPY_SHAPED = {"zeros", "ones", "empty", "full"}
_NUMPY_LIKE = {"zeros_like", "ones_like", "empty_like", "full_like", "copy", "ascontiguousarray"}
# numpy constructors copying their data (a nested literal list, or another array)
_NUMPY_DATA = {"array", "asarray"}
# numpy random generators taking the extents as separate arguments
_NUMPY_SPREAD = {"rand", "randn"}
# a dtype keyword keeps the data's shape only when it is a scalar type (wp.vec3 eats the last axis)
_SCALAR_DTYPES = {
    "float",
    "int",
    "bool",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _const(value: float) -> Linear:
    return Linear(float(value))


def _symbol(text: str) -> Linear:
    return Linear(0.0, ((text, 1.0),))


def _add(a: Linear, b: Linear) -> Linear:
    return a - (Linear(0.0) - b)


def _scale(a: Linear, k: float) -> Linear:
    return Linear(a.const * k, tuple((s, c * k) for s, c in a.terms if c * k))


@dataclass(frozen=True)
class Extent:
    """An integer on the host between ``low`` and ``low + slack`` (``slack`` 0: exactly ``low``)."""

    low: Linear
    slack: int = 0

    def __add__(self, other: Extent) -> Extent:
        return Extent(_add(self.low, other.low), self.slack + other.slack)

    def __sub__(self, other: Extent) -> Extent:
        return Extent(self.low - other.low - _const(other.slack), self.slack + other.slack)

    def scaled(self, k: int) -> Extent:
        return Extent(_scale(self.low, k), self.slack * k)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(s for s, _ in self.low.terms)


def extent_text(extent: Extent) -> str:
    """``n``, ``a.shape[0] + 1``, ``64``: an extent's low end as a message writes it."""
    parts: list[str] = []
    for symbol, coeff in extent.low.terms:
        k = int(coeff) if coeff == int(coeff) else coeff
        parts.append(symbol if k == 1 else f"-{symbol}" if k == -1 else f"{k} * {symbol}")
    const = extent.low.const
    c = int(const) if const == int(const) else const
    if c or not parts:
        parts.append(str(c))
    return " + ".join(parts).replace("+ -", "- ")


class Cover(str, Enum):
    """How a launch dim's component relates to an array's extent along the axis it indexes."""

    EXACT = "exact"  # always equal
    MORE = "more"  # always larger: the last threads are past the end
    MAYBE_MORE = "maybe-more"  # larger unless a divisibility holds (a dim rounded up to whole blocks)
    WITHIN = "within"  # never larger
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Comparison:
    """How a launch dim compares with an extent: the cover, and the range of their difference."""

    cover: Cover
    # the dim minus the extent lies in low..high (integers; 0, 0 when unknown)
    low: int = 0
    high: int = 0


def compare(dim: Extent, extent: Extent) -> Comparison:
    """Whether ``dim`` covers ``extent`` exactly, more, possibly more, or never more."""
    diff = dim.low - extent.low
    if not diff.is_constant or diff.const != int(diff.const):
        return Comparison(Cover.UNKNOWN)
    low = int(diff.const) - extent.slack
    high = int(diff.const) + dim.slack
    if low == high == 0:
        return Comparison(Cover.EXACT, 0, 0)
    if low > 0:
        return Comparison(Cover.MORE, low, high)
    if high <= 0:
        return Comparison(Cover.WITHIN, low, high)
    return Comparison(Cover.MAYBE_MORE, low, high)


# ---------------------------------------------------------------------------------------------------
# what a scope and a class say about their names, computed once per node


@dataclass(eq=False, repr=False)
class _ScopeInfo:
    """What a scope binds that shape reasoning follows (cached per scope node)."""

    # names assigned once from the elements of a tuple: `nx, ny = img.shape` -> (img, 0), (img, 1)
    unpacked_shape: dict[str, tuple[ast.expr, int]] = field(default_factory=dict)
    # `nx, ny = 64, 32`: name -> element
    unpacked_values: dict[str, ast.expr] = field(default_factory=dict)
    # names certainly integers: shape elements of an allocation, range() bounds, `: int` parameters
    integers: set[str] = field(default_factory=set)
    # every name stored in the scope, with its number of bindings (parameters count once)
    stores: dict[str, int] = field(default_factory=dict)
    # attribute chains stored in the scope (`self.n = ...`), by source text
    stored_attributes: set[str] = field(default_factory=set)
    # names bound by a loop (`for n in sizes:`): a new value each iteration
    loop_bound: set[str] = field(default_factory=set)


_SCOPE_INFO: weakref.WeakKeyDictionary[ast.AST, _ScopeInfo] = weakref.WeakKeyDictionary()


def _chain_text(node: ast.expr) -> str | None:
    """``a``, ``self.pos``, ``state.q``: a name and attributes only (None for anything else)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _shape_args(call: ast.Call) -> list[ast.expr]:
    """The shape of a numpy or Warp allocation call when it is a literal tuple or list (else [])."""
    shape = next((kw.value for kw in call.keywords if kw.arg == "shape"), None)
    if shape is None and call.args:
        shape = call.args[0]
    if isinstance(shape, ast.Tuple | ast.List):
        return [e for e in shape.elts if not isinstance(e, ast.Starred)]
    return []


def literal_shape(node: ast.expr) -> list[int] | None:
    """The shape of a nested literal list or tuple of numbers (``[[0.0, 0.0, -9.81]]``: ``[1, 3]``); None
    when it is ragged, empty below its first axis, or holds anything but literals and unary minus."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    if any(isinstance(e, ast.Starred) for e in node.elts):
        return None
    if not node.elts:
        return [0]
    inner = [literal_shape(e) for e in node.elts]
    if all(s is None for s in inner):
        scalar = all(
            isinstance(e, ast.Constant)
            or (isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant))
            for e in node.elts
        )
        return [len(node.elts)] if scalar else None
    first = inner[0]
    if first is None or any(s != first for s in inner):
        return None
    return [len(node.elts), *first]


def _constant_node(value: int) -> ast.expr:
    return ast.Constant(value)


def _scalar_dtype(call: ast.Call) -> bool:
    """Whether ``wp.array(data, dtype=...)`` keeps the data's shape: no dtype, or a scalar one."""
    dtype = next((kw.value for kw in call.keywords if kw.arg == "dtype"), None)
    if dtype is None and len(call.args) > 1:
        dtype = call.args[1]
    return (
        dtype is None
        or _call_name(dtype) in _SCALAR_DTYPES
        or (isinstance(dtype, ast.Name) and dtype.id in _SCALAR_DTYPES)
    )


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


# the nodes `_scope_info` and `_class_info` read
_SCOPE_KINDS = frozenset(
    {ast.Name, ast.Attribute, ast.For, ast.AsyncFor, ast.comprehension, ast.Assign, ast.Call}
)
_CLASS_KINDS = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Call})


def _scope_info(scope: ast.AST) -> _ScopeInfo:
    info = _SCOPE_INFO.get(scope)
    if info is not None:
        return info
    info = _ScopeInfo()
    nodes = scope_nodes(scope)
    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        args = scope.args
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            info.stores[a.arg] = info.stores.get(a.arg, 0) + 1
            if isinstance(a.annotation, ast.Name) and a.annotation.id == "int":
                info.integers.add(a.arg)
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                info.stores[rest.arg] = info.stores.get(rest.arg, 0) + 1
    unpacks: list[tuple[list[ast.expr], ast.expr]] = []
    for node in nodes:
        if type(node) not in _SCOPE_KINDS:
            continue  # (the parser makes no subclasses of node classes)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            info.stores[node.id] = info.stores.get(node.id, 0) + 1
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            text = _chain_text(node)
            if text is not None:
                info.stored_attributes.add(text)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            info.loop_bound.update(n.id for n in walk(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Tuple | ast.List) and all(isinstance(e, ast.Name) for e in target.elts):
                unpacks.append((list(target.elts), node.value))
        elif isinstance(node, ast.Call):
            name = _call_name(node.func)
            bounds: list[ast.expr] = []
            if name == "range" and isinstance(node.func, ast.Name):
                bounds = list(node.args)
            elif name in _NUMPY_SHAPED or name in ("empty", "zeros", "ones", "full"):
                bounds = _shape_args(node)
            for bound in bounds:
                text = _chain_text(bound)
                if text is not None and "." not in text:
                    info.integers.add(text)
    for targets, value in unpacks:
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if any(info.stores.get(n) != 1 for n in names):
            continue
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            for k, n in enumerate(names):
                info.unpacked_shape[n] = (value.value, k)
                info.integers.add(n)
        elif isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(names):
            if not any(isinstance(e, ast.Starred) for e in value.elts):
                for n, element in zip(names, value.elts, strict=True):
                    info.unpacked_values[n] = element
    if not isinstance(scope, ast.Module):  # a module is new on every parse
        _SCOPE_INFO[scope] = info
    return info


@dataclass(eq=False, repr=False)
class _ClassInfo:
    """The ``self.X`` fields of a class and how they are bound (cached per class node)."""

    # `self.X = value` per field, with the method it is in (every binding of the field in the class)
    fields: dict[str, list[tuple[ast.expr, ast.FunctionDef | ast.AsyncFunctionDef]]] = field(
        default_factory=dict
    )
    # fields also bound some other way (augmented assignment, tuple target, ...): not followed
    rebound: set[str] = field(default_factory=set)
    # fields used as the shape element of an allocation or a range() bound: certainly integers
    integers: set[str] = field(default_factory=set)


_CLASS_INFO: weakref.WeakKeyDictionary[ast.ClassDef, _ClassInfo] = weakref.WeakKeyDictionary()


def _self_field(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _class_info(cls: ast.ClassDef) -> _ClassInfo:
    info = _CLASS_INFO.get(cls)
    if info is not None:
        return info
    info = _ClassInfo()
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in scope_nodes(method):
            if type(node) not in _CLASS_KINDS:
                continue  # (the parser makes no subclasses of node classes)
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    name = _self_field(target)
                    if name is not None:
                        info.fields.setdefault(name, []).append((node.value, method))
                    elif not isinstance(target, ast.Name):
                        inner = (_self_field(t) for t in walk(target) if isinstance(t, ast.expr))
                        info.rebound.update(n for n in inner if n)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                name = _self_field(node.target)
                if name is not None:
                    if isinstance(node, ast.AnnAssign) and node.value is not None:
                        info.fields.setdefault(name, []).append((node.value, method))
                    else:
                        info.rebound.add(name)
            elif isinstance(node, ast.Call):
                name = _call_name(node.func)
                bounds: list[ast.expr] = []
                if name == "range" and isinstance(node.func, ast.Name):
                    bounds = list(node.args)
                elif name in ("empty", "zeros", "ones", "full"):
                    bounds = _shape_args(node)
                for bound in bounds:
                    field_name = _self_field(bound)
                    if field_name is not None:
                        info.integers.add(field_name)
    _CLASS_INFO[cls] = info
    return info


# ---------------------------------------------------------------------------------------------------


class ShapeEnv:
    """Ranks and symbolic values of host expressions as seen at one launch site (or in one method)."""

    def __init__(
        self,
        site: LaunchSite | None,
        constants: Mapping[str, Value],
        imports: ImportMap,
        array_ranks: Mapping[str, int] | None = None,
        *,
        scope: ast.AST | None = None,
        owner: ast.ClassDef | None = None,
        local_values: Mapping[str, Value] | None = None,
        aliases: Mapping[str, ast.expr] | None = None,
    ) -> None:
        self.site = site
        self.imports = imports
        self.constants = constants
        self.array_ranks: Mapping[str, int] = array_ranks or {}
        if site is not None:
            self.scope: ast.AST = site.scope
            self.owner = site.owner
            self._local_values: Mapping[str, Value] = site.local_values
            self.aliases: Mapping[str, ast.expr] = site.local_aliases
        else:
            assert scope is not None
            self.scope = scope
            self.owner = owner
            self._local_values = local_values or {}
            self.aliases = aliases if aliases is not None else scope_aliases(scope)
        # both made when first read: most launch dims fold without them
        self._env: Mapping[str, Value] | None = None
        self._info: _ScopeInfo | None = None
        # what the owner class binds, read when first needed (most launch dims never ask)
        self._class_read = False
        self._class_known: _ClassInfo | None = None
        # the envs of the class's other methods, made when first needed
        self._methods: dict[int, ShapeEnv] = {}
        # the scope's names used other than whole by an array constructor (see `data_shape`)
        self._touched: frozenset[str] | None = None

    @property
    def env(self) -> Mapping[str, Value]:
        """The module's constants with the scope's local values over them."""
        if self._env is None:
            self._env = {**self.constants, **self._local_values} if self._local_values else self.constants
        return self._env

    @property
    def info(self) -> _ScopeInfo:
        if self._info is None:
            self._info = _scope_info(self.scope)
        return self._info

    @property
    def _class(self) -> _ClassInfo | None:
        if not self._class_read:
            self._class_known = _class_info(self.owner) if self.owner is not None else None
            self._class_read = True
        return self._class_known

    # names -------------------------------------------------------------------------------------
    def _stable_name(self, name: str) -> bool:
        """A name bound at most once in the scope (a parameter, a single assignment; none: a global the
        scope does not rebind) and not by a loop: the same value wherever the scope reads it."""
        return self.info.stores.get(name, 0) <= 1 and name not in self.info.loop_bound

    def _stable_attribute(self, node: ast.Attribute, text: str) -> bool:
        """``self.n`` bound once in the class, or any attribute chain the scope does not store to."""
        name = _self_field(node)
        if name is not None and self._class is not None and name not in self._class.rebound:
            bindings = self._class.fields.get(name, [])
            if len(bindings) == 1:
                return True
        return text not in self.info.stored_attributes

    def _alias(self, node: ast.expr) -> ast.expr | None:
        """The value a local name was assigned once (also from a literal tuple unpacking)."""
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.aliases:
            return self.aliases[node.id]
        return self.info.unpacked_values.get(node.id)

    def resolve(self, node: ast.expr, depth: int = 0) -> ast.expr:
        """``node`` with local single-assigned names followed."""
        while depth < _MAX_DEPTH:
            value = self._alias(node)
            if value is None:
                return node
            node, depth = value, depth + 1
        return node

    def _field_values(self, name: str) -> list[tuple[ast.expr, ShapeEnv]] | None:
        """Every value the class binds ``self.<name>`` to, each with the env of its method (None when the
        class binds it some other way, or is unknown)."""
        if self._class is None or name in self._class.rebound:
            return None
        bindings = self._class.fields.get(name)
        if not bindings:
            return None
        owner = self.owner
        out: list[tuple[ast.expr, ShapeEnv]] = []
        for value, method in bindings:
            env = self if method is self.scope else self._method_env(method, owner)
            out.append((value, env))
        return out

    # kinds: integer or tuple of integers ------------------------------------------------------
    def kind(self, node: ast.expr, depth: int = 0) -> int | None:
        """`SCALAR` for an integer, ``r`` for a tuple of ``r`` integers, None when unsure."""
        if depth > _MAX_DEPTH:
            return None
        folded = fold(node, self.env, self.imports)
        if _is_int(folded):
            return SCALAR
        if isinstance(folded, tuple):
            return len(folded) or None
        if isinstance(folded, float | bool):
            return None
        if isinstance(node, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in node.elts) or not node.elts:
                return None
            return len(node.elts)
        if isinstance(node, ast.Name):
            alias = self._alias(node)
            if alias is not None:
                return self.kind(alias, depth + 1)
            if node.id in self.info.integers or node.id in self.info.unpacked_shape:
                return SCALAR
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "shape":
                rank = self.array_rank(node.value, depth + 1)
                return rank if rank else None
            if node.attr == "size" and self.array_rank(node.value, depth + 1) is not None:
                return SCALAR
            name = _self_field(node)
            if name is not None:
                return self._field_kind(name, depth)
            return None
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                if isinstance(node.slice, ast.Slice):
                    picked = self._sliced(node.slice, self.array_rank(node.value.value, depth + 1))
                    return len(picked) or None if picked is not None else None
                index = fold(node.slice, self.env, self.imports)
                return SCALAR if _is_int(index) else None
            return None
        if isinstance(node, ast.Call):
            name = _call_name(node.func)
            if isinstance(node.func, ast.Name) and name in ("len", "int"):
                return SCALAR
            if self.imports.dotted(node.func) in ("numpy.prod", "math.prod", "math.ceil", "math.floor"):
                return SCALAR
            if isinstance(node.func, ast.Name) and name in ("min", "max") and len(node.args) >= 2:
                kinds = [self.kind(a, depth + 1) for a in node.args]
                return SCALAR if all(k == SCALAR for k in kinds) else None
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            return SCALAR if self.kind(node.operand, depth + 1) == SCALAR else None
        if isinstance(node, ast.BinOp):
            left = self.kind(node.left, depth + 1)
            right = self.kind(node.right, depth + 1)
            if isinstance(node.op, ast.Add):
                if left == SCALAR or right == SCALAR:
                    return SCALAR  # a tuple plus an integer raises
                if left is not None and right is not None:
                    return left + right  # tuples concatenate
                return None
            if isinstance(node.op, ast.Sub | ast.FloorDiv | ast.Mod):
                return SCALAR if SCALAR in (left, right) else None
            if isinstance(node.op, ast.Mult):
                if left == SCALAR and right == SCALAR:
                    return SCALAR
                for tup, times in ((left, node.right), (right, node.left)):
                    count = fold(times, self.env, self.imports)
                    if tup and isinstance(count, int) and not isinstance(count, bool) and count > 0:
                        return tup * count
            return None
        return None

    def _sliced(self, bounds: ast.Slice, rank: int | None) -> list[int] | None:
        """The axes ``shape[lower:upper:step]`` picks of an array of ``rank`` dimensions (None: unsure)."""
        if rank is None:
            return None
        values: list[int | None] = []
        for bound in (bounds.lower, bounds.upper, bounds.step):
            if bound is None:
                values.append(None)
                continue
            value = fold(bound, self.env, self.imports)
            if not isinstance(value, int) or isinstance(value, bool):
                return None
            values.append(value)
        if values[2] == 0:
            return None
        return list(range(rank)[slice(values[0], values[1], values[2])])

    def _field_kind(self, name: str, depth: int) -> int | None:
        if self._class is not None and name in self._class.integers and name not in self._class.rebound:
            return SCALAR
        values = self._field_values(name)
        if not values:
            return None
        kinds = {env.kind(value, depth + 1) for value, env in values}
        return kinds.pop() if len(kinds) == 1 else None

    def dim_rank(self) -> int | None:
        """How many dimensions the site's launch dim has, when certain."""
        if self.site is None or self.site.dim is None:
            return None
        kind = self.kind(self.site.dim)
        if kind is None:
            return None
        return 1 if kind == SCALAR else kind

    # arrays ------------------------------------------------------------------------------------
    def _allocator(self, node: ast.expr) -> tuple[str, str] | None:
        """(library, name) of an allocation call's function: ("warp", "zeros"), ("numpy", "rand")."""
        if not isinstance(node, ast.Call):
            return None
        warp = self.imports.warp_name(node.func)
        if warp is not None:
            return ("warp", warp)
        dotted = self.imports.dotted(node.func)
        if dotted is not None and dotted.startswith("numpy."):
            return ("numpy", dotted.rsplit(".", 1)[-1])
        return None

    def array_rank(self, node: ast.expr, depth: int = 0) -> int | None:
        """The number of dimensions of the array ``node`` is, when certain."""
        if depth > _MAX_DEPTH:
            return None
        text = _chain_text(node)
        if text is not None and text in self.array_ranks:
            return self.array_ranks[text]
        alias = self._alias(node)
        if alias is not None:
            return self.array_rank(alias, depth + 1)
        name = _self_field(node)
        if name is not None:
            values = self._field_values(name)
            if not values:
                return None
            ranks = {env.array_rank(value, depth + 1) for value, env in values}
            return ranks.pop() if len(ranks) == 1 else None
        shape = self.allocated_shape(node, depth)
        return len(shape) if shape is not None else None

    def allocated_shape(self, node: ast.expr, depth: int = 0) -> list[ast.expr | None] | None:
        """Per axis, the extent expression of the allocation ``node`` (None for an axis the allocation
        does not spell, as ``wp.empty_like(x)`` does not); None when ``node`` is not an allocation whose
        rank is certain."""
        if depth > _MAX_DEPTH or not isinstance(node, ast.Call):
            return None
        which = self._allocator(node)
        if which is None:
            return None
        library, name = which
        if library == "warp":
            host = allocation(node, self.imports)
            if host is None:
                return None
            if host.like is not None:
                rank = self.array_rank(host.like, depth + 1)
                return [None] * rank if rank is not None else None
            if host.shape is not None:
                return self._spelled_shape(host.shape, depth)
            if host.data is not None:
                return self._wrapped_shape(node, host.data, depth)
            return None
        # numpy
        if name in _NUMPY_SHAPED:
            shape_node = next((kw.value for kw in node.keywords if kw.arg == "shape"), None)
            if shape_node is None and node.args:
                shape_node = node.args[0]
            if shape_node is None:
                return None
            elements = list(shape_node.elts) if isinstance(shape_node, ast.Tuple | ast.List) else [shape_node]
            return self._spelled_shape(tuple(elements), depth)
        if name in _NUMPY_SPREAD and node.args and not node.keywords:
            return self._spelled_shape(tuple(node.args), depth)
        if name == "arange" and len(node.args) == 1 and not node.keywords:
            return [node.args[0]]
        if name in _NUMPY_DATA and node.args:
            literal = self.data_shape(node.args[0])
            if literal is not None:
                return [_constant_node(n) for n in literal]
            data = self.resolve(node.args[0])
            if isinstance(data, ast.Call):
                return self.allocated_shape(data, depth + 1)
            return None
        if name in _NUMPY_LIKE and node.args:
            rank = self.array_rank(node.args[0], depth + 1)
            return [None] * rank if rank is not None else None
        return None

    def _spelled_shape(self, shape: tuple[ast.expr, ...], depth: int) -> list[ast.expr | None] | None:
        if len(shape) == 1:
            kind = self.kind(shape[0], depth + 1)
            if kind is None:
                return None
            if kind != SCALAR:
                resolved = self.resolve(shape[0])
                if isinstance(resolved, ast.Tuple | ast.List) and len(resolved.elts) == kind:
                    return list(resolved.elts)
                return [None] * kind
        elif any(isinstance(e, ast.Starred) for e in shape):
            return None
        return list(shape)

    def _wrapped_shape(self, call: ast.Call, data: ast.expr, depth: int) -> list[ast.expr | None] | None:
        """``wp.array(data)``: the data's shape; a vector or matrix dtype takes trailing axes away (only the
        first extent is known then, and not the rank)."""
        if not _scalar_dtype(call):
            return None
        resolved = self.resolve(data)
        literal = self.data_shape(data)
        if literal is not None:
            return [_constant_node(n) for n in literal]
        rank = self.array_rank(data, depth + 1)
        if rank is None:
            return None
        spelled = self.allocated_shape(resolved, depth + 1) if isinstance(resolved, ast.Call) else None
        return spelled if spelled is not None else [None] * rank

    def data_shape(self, node: ast.expr) -> list[int] | None:
        """The shape of a nested literal list given as array data, directly or through locals assigned it
        once; None when a local on the way may be changed in place (``axes.extend(...)``, ``axes[0] = ...``,
        or handed to a function that is not an array constructor or ``len``)."""
        for _ in range(_MAX_DEPTH):
            if not isinstance(node, ast.Name):
                break
            if node.id in self._touched_lists():
                return None
            alias = self._alias(node)
            if alias is None:
                return None
            node = alias
        return literal_shape(node)

    def _touched_lists(self) -> frozenset[str]:
        """Names of the scope used some way other than read whole by an array constructor or ``len``."""
        if self._touched is None:
            touched: set[str] = set()
            for node in scope_nodes(self.scope):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    touched.add(node.value.id)
                elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
                    if not isinstance(node.ctx, ast.Load):
                        touched.add(node.value.id)
                elif isinstance(node, ast.Call) and _call_name(node.func) not in (
                    *_NUMPY_DATA,
                    "array",
                    "len",
                ):
                    touched.update(
                        a.id
                        for a in (*node.args, *(k.value for k in node.keywords))
                        if isinstance(a, ast.Name)
                    )
            self._touched = frozenset(touched)
        return self._touched

    # values ------------------------------------------------------------------------------------
    def shape_symbol(self, array: ast.expr, axis: int) -> str | None:
        """``a.shape[k]``'s canonical text for an array spelled by name and attributes (the local name an
        alias chain of plain names leads to)."""
        node = array
        for _ in range(_MAX_DEPTH):
            alias = self._alias(node)
            if alias is None or _chain_text(alias) is None:
                break
            node = alias
        text = _chain_text(node)
        return f"{text}.shape[{axis}]" if text is not None else None

    def value(self, node: ast.expr, depth: int = 0) -> Extent | None:
        """The integer ``node`` is on the host, symbolically; None when it is not an integer expression
        the model can follow (or it may change value within the scope: a name bound more than once)."""
        if depth > _MAX_DEPTH:
            return None
        folded = fold(node, self.env, self.imports)
        if _is_int(folded) or (isinstance(folded, float) and folded == int(folded)):
            return Extent(_const(folded))  # type: ignore[arg-type]
        if folded is not None:
            return None
        if isinstance(node, ast.Name):
            alias = self._alias(node)
            if alias is not None:
                return self.value(alias, depth + 1)
            if node.id in self.info.unpacked_shape:
                array, axis = self.info.unpacked_shape[node.id]
                symbol = self.shape_symbol(array, axis)
                return Extent(_symbol(symbol)) if symbol is not None else None
            if not self._stable_name(node.id):
                return None
            return Extent(_symbol(node.id))
        if isinstance(node, ast.Call):
            name = _call_name(node.func)
            if isinstance(node.func, ast.Name) and name == "len" and len(node.args) == 1:
                symbol = self.shape_symbol(node.args[0], 0)
                return Extent(_symbol(symbol)) if symbol is not None else None
            if isinstance(node.func, ast.Name) and name == "int" and len(node.args) == 1:
                inner = node.args[0]
                if isinstance(inner, ast.Call) and self._is_ceil(inner):
                    return self._opaque(node)
                return self.value(inner, depth + 1)
            return None
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
                index = fold(node.slice, self.env, self.imports)
                if not _is_int(index):
                    return None
                axis = int(index)  # type: ignore[arg-type]
                if axis < 0:
                    rank = self.array_rank(node.value.value, depth + 1)
                    if rank is None or axis < -rank:
                        return None
                    axis += rank
                symbol = self.shape_symbol(node.value.value, axis)
                return Extent(_symbol(symbol)) if symbol is not None else None
            return None
        if isinstance(node, ast.Attribute):
            if node.attr == "size" and self.array_rank(node.value, depth + 1) == 1:
                symbol = self.shape_symbol(node.value, 0)
                return Extent(_symbol(symbol)) if symbol is not None else None
            text = _chain_text(node)
            if text is None or not self._stable_attribute(node, text):
                return None
            return Extent(_symbol(text))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner_value = self.value(node.operand, depth + 1)
            return inner_value.scaled(-1) if inner_value is not None and not inner_value.slack else None
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Add | ast.Sub):
                left = self.value(node.left, depth + 1)
                right = self.value(node.right, depth + 1)
                if left is None or right is None:
                    return None
                return left + right if isinstance(node.op, ast.Add) else left - right
            if isinstance(node.op, ast.Mult):
                return self._product(node, depth)
            if isinstance(node.op, ast.FloorDiv | ast.Mod):
                return self._opaque(node)
        return None

    def _opaque(self, node: ast.expr) -> Extent | None:
        """An expression the model does not take apart, as one symbol (its names must be stable)."""
        for sub in walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                if sub.id in self.imports.modules or sub.id in self.imports.objects:
                    continue
                if sub.id in self.aliases or not self._stable_name(sub.id):
                    return None  # a local: its value may be spelled another way elsewhere
            elif isinstance(sub, ast.Call) and _call_name(sub.func) not in ("int", "len", "ceil"):
                return None
        return Extent(_symbol(ast.unparse(node)))

    def _is_ceil(self, call: ast.Call) -> bool:
        dotted = self.imports.dotted(call.func)
        return dotted in ("math.ceil", "numpy.ceil") and len(call.args) == 1 and not call.keywords

    def _blocks(self, node: ast.expr, size: int, depth: int) -> Extent | None:
        """``size * node`` when ``node`` counts the whole blocks of ``size`` covering some ``y``:
        ``(y + c) // size`` gives ``y + c - (size - 1) .. y + c``; ``ceil(y / size)`` and
        ``-(-y // size)`` give ``y .. y + size - 1``."""
        node = self.resolve(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "int":
            if len(node.args) == 1 and not node.keywords:
                node = node.args[0]
        y: ast.expr | None = None
        ceiling = False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
            if fold(node.right, self.env, self.imports) == size:
                y = node.left
        elif isinstance(node, ast.Call) and self._is_ceil(node):
            inner = node.args[0]
            if (
                isinstance(inner, ast.BinOp)
                and isinstance(inner.op, ast.Div)
                and fold(inner.right, self.env, self.imports) == size
            ):
                y, ceiling = inner.left, True
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = node.operand
            if (
                isinstance(inner, ast.BinOp)
                and isinstance(inner.op, ast.FloorDiv)
                and isinstance(inner.left, ast.UnaryOp)
                and isinstance(inner.left.op, ast.USub)
                and fold(inner.right, self.env, self.imports) == size
            ):
                y, ceiling = inner.left.operand, True
        if y is None:
            return None
        covered = self.value(y, depth + 1)
        if covered is None:
            return None
        if ceiling:
            return Extent(covered.low, covered.slack + size - 1)
        return Extent(covered.low - _const(size - 1), covered.slack + size - 1)

    def _product(self, node: ast.BinOp, depth: int) -> Extent | None:
        for count, size_node in ((node.left, node.right), (node.right, node.left)):
            size = fold(size_node, self.env, self.imports)
            if not _is_int(size) or size <= 0:  # type: ignore[operator]
                continue
            blocks = self._blocks(count, int(size), depth)  # type: ignore[arg-type]
            if blocks is not None:
                return blocks
            inner = self.value(count, depth + 1)
            return inner.scaled(int(size)) if inner is not None else None  # type: ignore[arg-type]
        return self._opaque(node)

    def dim_components(self) -> list[ast.expr | tuple[ast.expr, int]] | None:
        """The launch dim per axis: an expression, or (array, axis) for ``a.shape`` / ``a.shape[:k]``."""
        if self.site is None or self.site.dim is None:
            return None
        node = self.resolve(self.site.dim)
        if isinstance(node, ast.Tuple | ast.List):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return None
            return list(node.elts)
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            rank = self.array_rank(node.value)
            return [(node.value, k) for k in range(rank)] if rank else None
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
            and isinstance(node.slice, ast.Slice)
        ):
            rank = self.array_rank(node.value.value)
            picked = self._sliced(node.slice, rank)
            return [(node.value.value, k) for k in picked] if picked else None
        if self.kind(node) == SCALAR:
            return [node]
        return None

    def dim_value(self, axis: int) -> Extent | None:
        """The launch dim's component ``axis``, symbolically."""
        parts = self.dim_components()
        if parts is None or axis >= len(parts):
            return None
        part = parts[axis]
        if isinstance(part, tuple):
            symbol = self.shape_symbol(part[0], part[1])
            return Extent(_symbol(symbol)) if symbol is not None else None
        return self.value(part)

    def dim_source(self, axis: int) -> tuple[ast.expr, int] | None:
        """(array, k) when the launch dim's component ``axis`` is read off another array: ``dim=a.shape``,
        ``a.shape[:2]``, ``a.shape[k]``, ``len(a)`` (also through a local: ``n = a.shape[0]``)."""
        parts = self.dim_components()
        if parts is None or axis >= len(parts):
            return None
        part = parts[axis]
        if isinstance(part, tuple):
            return part
        node = self.resolve(part)
        if isinstance(node, ast.Name) and node.id in self.info.unpacked_shape:
            return self.info.unpacked_shape[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
            if len(node.args) == 1 and not node.keywords:
                return (node.args[0], 0)
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape"
        ):
            index = fold(node.slice, self.env, self.imports)
            if _is_int(index) and int(index) >= 0:  # type: ignore[arg-type]
                return (node.value.value, int(index))  # type: ignore[arg-type]
        return None

    def known_extent(self, array: ast.expr, axis: int) -> int | None:
        """The number of elements ``array`` holds along ``axis`` when some spelling of it is a constant
        (``wp.zeros((1, n))``: 1 along axis 0; ``wp.array(np.array([[0.0, 0.0, -9.81]]), dtype=wp.vec3)``: 1;
        ``wp.zeros(shape=(nworld, 0))``: 0 along axis 1)."""
        for extent in self.extents(array, axis):
            if extent.low.is_constant and not extent.slack and extent.low.const == int(extent.low.const):
                return int(extent.low.const)
        return None

    def extents(self, array: ast.expr, axis: int, depth: int = 0) -> list[Extent]:
        """What the array ``array`` is known to hold along ``axis`` (several spellings of one number):
        ``a.shape[axis]`` at the launch for an array spelled by name, and the allocation's extent for one
        allocated once in the scope or in the class."""
        if depth > _MAX_DEPTH:
            return []
        found: list[Extent] = []
        symbol = self.shape_symbol(array, axis)
        if symbol is not None:
            found.append(Extent(_symbol(symbol)))
        resolved = self.resolve(array)
        name = _self_field(resolved)
        if name is not None:
            values = self._field_values(name)
            if values is not None and len(values) == 1:
                value, env = values[0]
                for extent in env.extents(value, axis, depth + 1):
                    translated = self._from_method(extent, env)
                    if translated is not None:
                        found.append(translated)
            return found
        if isinstance(resolved, ast.List | ast.Tuple):  # the data of `wp.array([[...]])` / `np.array(...)`
            literal = self.data_shape(array)
            if literal is not None and axis < len(literal):
                found.append(Extent(_const(literal[axis])))
            return found
        if isinstance(resolved, ast.Call):
            which = self._allocator(resolved)
            if which is not None and which[0] == "numpy" and which[1] in _NUMPY_LIKE and resolved.args:
                found.extend(self.extents(resolved.args[0], axis, depth + 1))  # `np.zeros_like(verts)`
                return found
            if which is not None and which[0] == "warp":
                host = allocation(resolved, self.imports)
                if host is not None and host.like is not None:
                    found.extend(self.extents(host.like, axis, depth + 1))
                    return found
                if host is not None and host.data is not None and host.shape is None and axis == 0:
                    # a vector or matrix dtype eats the data's trailing axes: a flat list is not one per row
                    if _scalar_dtype(resolved) or self.array_rank(host.data, depth + 1) != 1:
                        found.extend(self.extents(host.data, 0, depth + 1))
            shape = self.allocated_shape(resolved, depth)
            if shape is None and which is not None and which[0] == "warp" and axis == 0:
                # `wp.zeros(n)` with `n` of unknown kind: its extent is `n` whenever `n` is an integer, which
                # any comparison with an integer dim made of `n` implies (a tuple there would raise)
                host = allocation(resolved, self.imports)
                if host is not None and host.shape is not None and len(host.shape) == 1:
                    shape = [host.shape[0]]
            if shape is not None and axis < len(shape):
                part = shape[axis]
                allocated = self.value(part, depth + 1) if part is not None else None
                if allocated is not None:
                    found.append(allocated)
        return found

    def _method_env(
        self, method: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef | None
    ) -> ShapeEnv:
        env = self._methods.get(id(method))
        if env is None:
            aliases = scope_aliases(method)
            local_values: dict[str, Value] = {}
            for name, value_node in reversed(list(aliases.items())):
                folded = fold(value_node, {**self.constants, **local_values}, self.imports)
                if folded is not None:
                    local_values[name] = folded
            env = ShapeEnv(
                None,
                self.constants,
                self.imports,
                scope=method,
                owner=owner,
                local_values=local_values,
                aliases=aliases,
            )
            env._methods = self._methods  # one cache for the class: no env is made twice
            self._methods[id(method)] = env
        return env

    def _from_method(self, extent: Extent, env: ShapeEnv) -> Extent | None:
        """An extent computed in another method of the class, in this scope's terms: constants stay, a
        name of that method becomes ``self.<field>`` when the class binds the field to it once there."""
        if env is self:
            return extent
        assert self._class is not None
        terms: list[tuple[str, float]] = []
        for symbol, coeff in extent.low.terms:
            translated = None
            for field_name, bindings in self._class.fields.items():
                if field_name in self._class.rebound or len(bindings) != 1:
                    continue
                value, method = bindings[0]
                if method is env.scope and isinstance(value, ast.Name) and value.id == symbol:
                    translated = f"self.{field_name}"
                    break
            if translated is None:
                field_name = symbol.removeprefix("self.")
                bound = self._class.fields.get(field_name, [])
                # another method's `self.n` is this one's only when nothing else in the class rebinds it
                if symbol.startswith("self.") and field_name not in self._class.rebound and len(bound) <= 1:
                    translated = symbol
                else:
                    return None
            terms.append((translated, coeff))
        return Extent(Linear(extent.low.const, tuple(sorted(terms))), extent.slack)


def param_ranks(kernel: KernelDef) -> list[int | None]:
    """The rank of each of ``kernel``'s parameters that is a plain array (None for the others)."""
    return [
        p.type.ndim if isinstance(p.type, Array) and p.type.kind == "array" else None for p in kernel.params
    ]


def argument_ranks(site: LaunchSite, param_ranks: list[int | None]) -> dict[str, int]:
    """The rank of each array the launch passes by name (``a``, ``self.pos``), from the rank of the kernel
    parameter it is passed to (``param_ranks``: one per parameter, None for a non-array): Warp raises at
    launch when the two differ."""
    ranks: dict[str, int] = {}
    args = _launch_arguments(site)
    if args is None or len(args) != len(param_ranks):
        return ranks
    for arg, rank in zip(args, param_ranks, strict=True):
        text = _chain_text(arg)
        if text is not None and rank is not None:
            if ranks.get(text, rank) != rank:
                return {}  # one array passed to parameters of different ranks: the launch raises
            ranks[text] = rank
    return ranks


def launch_env(
    site: LaunchSite,
    constants: Mapping[str, Value],
    imports: ImportMap,
    param_ranks: list[int | None] | None = None,
) -> ShapeEnv:
    """The shapes seen at ``site``; ``param_ranks``: see `argument_ranks`."""
    ranks = argument_ranks(site, param_ranks) if param_ranks is not None else {}
    return ShapeEnv(site, constants, imports, ranks)


def _launch_arguments(site: LaunchSite) -> list[ast.expr] | None:
    call = site.node
    if any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords):
        return None
    inputs = site.argument_list("inputs")
    outputs = site.argument_list("outputs")
    if inputs is None or outputs is None:
        return None
    return [*inputs, *outputs]
