"""The Warp builtin signature table: lookup, call checking and return types.

Built from the plain data that ``extract.py`` dumps in a child process (see that module for the
layout); nothing here imports ``warp``. Matching mirrors Warp's overload resolution
(``Adjoint.resolve_func`` and ``codegen.func_match_args``) but is conservative: every check has
three outcomes, *yes*, *no* and *maybe*, and a call is only reported bad when every overload
says *no*. An ``UNKNOWN`` argument, a parameter type the table cannot model, a ``TypeRef``
argument that would otherwise fail: all *maybe*.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..model.types import (
    FLOAT32,
    FLOAT_SCALARS,
    INT_SCALARS,
    SCALAR_ALIASES,
    UNKNOWN,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Struct,
    Tile,
    Transform,
    TupleType,
    TypeRef,
    UnknownType,
    Vector,
    WarpType,
    named_warp_type,
    warp_type_name,
)

TypeDict = dict[str, Any]

FORMAT = 1  # keep in step with extract.FORMAT

POSITIONAL_OR_KEYWORD = "positional_or_keyword"
VAR_POSITIONAL = "var_positional"
KEYWORD_ONLY = "keyword_only"
VAR_KEYWORD = "var_keyword"
_KINDS = (POSITIONAL_OR_KEYWORD, VAR_POSITIONAL, KEYWORD_ONLY, VAR_KEYWORD)

# Warp's generic scalars (warp._src.types): bfloat16 is a float there; bool is not a Scalar
_FLOATS = frozenset((*FLOAT_SCALARS, "bfloat16"))
_INTS = frozenset(INT_SCALARS)
_NUMERIC = _FLOATS | _INTS
_GENERIC_SETS: dict[str, frozenset[str]] = {
    "Float": _FLOATS,
    "Int": _INTS,
    "Scalar": _NUMERIC,
    "DTypeFloat": _FLOATS,
    "DTypeScalar": _NUMERIC,
}

NO, MAYBE, YES = 0, 1, 2
_MEMO_LIMIT = 20_000  # memoised check_call / return_type results per table
_NO_ARITY = -1


class TableFormatError(ValueError):
    """The data does not have the expected layout (a corrupt or foreign cache file)."""


class CallStatus(str, Enum):
    OK = "ok"
    UNKNOWN = "unknown"  # cannot decide (unknown argument types, types the table cannot model)
    BAD_ARITY = "bad_arity"  # no overload accepts this number (or these names) of arguments
    BAD_TYPES = "bad_types"  # some overload accepts the arguments' count, none their types
    # an overload matches, but Warp's own check of the arguments (its value_func) refuses them:
    # ``wp.where(c, 1, 0.0)`` (branches of two types), ``wp.atomic_add(ints, i, 1.0)``
    BAD_VALUES = "bad_values"
    REMOVED = "removed"  # the overload Warp picks has been removed (``wp.select``): it always raises


@dataclass(frozen=True)
class ParamSig:
    """One parameter of a builtin overload."""

    name: str
    type: TypeDict
    has_default: bool
    kind: str = POSITIONAL_OR_KEYWORD
    # False when Warp's own default value does not match the parameter type: then the overload
    # only matches when the argument is passed (Warp's func_match_args checks defaults too)
    default_matches: bool = True


@dataclass(frozen=True)
class Overload:
    """One overload of a builtin: its parameters and return type."""

    params: tuple[ParamSig, ...]
    # serialised type; None when Warp computes it in a value_func (see return_annotation)
    return_type: TypeDict | None
    # the return annotation of the matching stub in warp/__init__.pyi, for value_func overloads
    return_annotation: str | None
    variadic: bool
    hidden: bool
    # the Warp version that removed this overload (its documentation says ``versionremoved``): calling
    # it always raises; None for a live overload
    removed: str | None = None

    def arity(self) -> tuple[int, int | None]:
        """(required, maximum) argument count; maximum None with ``*args``/``**kwargs``."""
        required = sum(
            1 for p in self.params if p.kind in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY) and not p.has_default
        )
        unbounded = any(p.kind in (VAR_POSITIONAL, VAR_KEYWORD) for p in self.params)
        return required, None if unbounded else len(self.params)

    def signature(self, name: str) -> str:
        parts: list[str] = []
        star_done = False
        for p in self.params:
            text = f"{p.name}: {type_repr(p.type)}"
            if p.kind == VAR_POSITIONAL:
                text, star_done = "*" + text, True
            elif p.kind == VAR_KEYWORD:
                text = "**" + text
            elif p.kind == KEYWORD_ONLY and not star_done:
                parts.append("*")
                star_done = True
            if p.has_default:
                text += " = ..."
            parts.append(text)
        if self.return_type is not None:
            ret = type_repr(self.return_type)
        else:
            ret = self.return_annotation or "?"
        return f"{name}({', '.join(parts)}) -> {ret}"


@dataclass(frozen=True)
class Builtin:
    """A Warp builtin function and its overloads."""

    name: str
    overloads: tuple[Overload, ...]
    namespace: str = ""
    export: bool = False
    hidden: bool = False
    python_defined: bool = False  # a @wp.func in Warp's own sources (norm_l1, quat_to_rpy, ...)

    def signatures(self, limit: int = 12) -> tuple[str, ...]:
        """Readable signatures of the documented (non-hidden) overloads, at most ``limit``."""
        shown = [o for o in self.overloads if not o.hidden] or list(self.overloads)
        seen: list[str] = []
        for o in shown:
            s = o.signature(self.name)
            if s not in seen:
                seen.append(s)
        if len(seen) > limit:
            seen = [*seen[:limit], f"... ({len(seen) - limit} more)"]
        return tuple(seen)

    def arity_description(self) -> str:
        return describe_arity(o.arity() for o in self.overloads)


@dataclass(frozen=True, eq=False)
class CallCheck:
    """The verdict on a call of a builtin: its status, a message and the candidate signatures."""

    status: CallStatus
    message: str = ""
    expected_arity: str | None = None  # e.g. "1 or 2 arguments", with BAD_ARITY (and BAD_TYPES)
    signatures: tuple[str, ...] = ()  # candidate signatures, with BAD_TYPES and BAD_ARITY
    # with OK: the overloads Warp may pick, in its order; the last one surely matches
    matched: tuple[Overload, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status is CallStatus.OK

    @property
    def is_error(self) -> bool:
        return self.status in (
            CallStatus.BAD_ARITY,
            CallStatus.BAD_TYPES,
            CallStatus.BAD_VALUES,
            CallStatus.REMOVED,
        )


# --------------------------------------------------------------------------------------------
# Readable types
# --------------------------------------------------------------------------------------------


def type_repr(t: TypeDict | None) -> str:
    if t is None:
        return "?"
    k = t.get("k")
    if k in ("scalar", "generic", "py"):
        return str(t.get("n"))
    if k == "any":
        return "Any"
    if k == "vector":
        length = t.get("len")
        inner = f"length={length}, " if length is not None else ""
        return f"vector({inner}dtype={type_repr(t.get('dtype'))})"
    if k == "matrix":
        shape = t.get("shape") or [None, None]
        inner = f"shape=({shape[0]}, {shape[1]}), " if None not in shape else ""
        return f"matrix({inner}dtype={type_repr(t.get('dtype'))})"
    if k == "quat":
        return f"quaternion(dtype={type_repr(t.get('dtype'))})"
    if k == "transform":
        return f"transformation(dtype={type_repr(t.get('dtype'))})"
    if k == "array":
        return f"{t.get('kind') or 'array'}(dtype={type_repr(t.get('dtype'))})"
    if k == "tile":
        return f"tile(dtype={type_repr(t.get('dtype'))})"
    if k == "tuple":
        items = t.get("items")
        if items is None:
            return "tuple"
        inner = ", ".join(type_repr(x) for x in items)
        return f"tuple[{inner}, ...]" if t.get("ellipsis") else f"tuple[{inner}]"
    if k == "multi":
        return "tuple[" + ", ".join(type_repr(x) for x in t.get("items") or []) + "]"
    if k == "callable":
        return "Callable"
    if k == "none":
        return "None"
    return str(t.get("n", "?"))


def describe_arity(ranges: Iterable[tuple[int, int | None]]) -> str:
    """``[(1, 1), (2, 2)]`` -> ``"1 or 2 arguments"``; ``[(1, None)]`` -> ``"at least 1 argument"``."""
    finite: set[int] = set()
    unbounded: int | None = None
    for lo, hi in ranges:
        if hi is None:
            unbounded = lo if unbounded is None else min(unbounded, lo)
        else:
            finite.update(range(lo, hi + 1))
    counts = sorted(c for c in finite if unbounded is None or c < unbounded)
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{counts[i]} to {counts[j]}")
            i = j + 1
        else:
            parts.append(str(counts[i]))
            i += 1
    if unbounded is not None:
        parts.append(f"at least {unbounded}")
    if not parts:
        return "no arguments"
    text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]
    single = parts in (["1"], ["at least 1"])
    return text + (" argument" if single else " arguments")


# --------------------------------------------------------------------------------------------
# Matching a model type against a serialised parameter type
# --------------------------------------------------------------------------------------------


def _scalar_name(s: Scalar) -> str:
    return SCALAR_ALIASES.get(s.name, s.name)


def _match_scalar_param(p: TypeDict, arg: Scalar) -> int:
    k = p["k"]
    name = _scalar_name(arg)
    if k == "scalar":
        return YES if name == p.get("n") else NO
    if k == "generic":
        allowed = _GENERIC_SETS.get(str(p.get("n")))
        if allowed is None:
            return MAYBE  # an unconstrained TypeVar: Warp would treat it as a template
        return YES if name in allowed else NO
    return NO


_PLAIN_VALUES = (Scalar, Vector, Matrix, Quaternion, Transform)
_DEFINITE = (*_PLAIN_VALUES, Array, Tile, TupleType)


class _Matcher:
    def __init__(self, array_kinds: Mapping[str, Sequence[str]]) -> None:
        self.array_kinds = array_kinds

    def match(self, p: TypeDict, arg: WarpType) -> int:
        k = p.get("k")
        if k == "any":
            return YES
        if isinstance(arg, UnknownType):
            return MAYBE
        if isinstance(arg, TypeRef):
            # Warp passes the type object itself: it matches where the type's values would. Never
            # conclude "no" from it though: those are rare, odd calls that Warp may still accept.
            return YES if self.match(p, arg.of) == YES else MAYBE
        if k in ("scalar", "generic"):
            if isinstance(arg, Scalar):
                return _match_scalar_param(p, arg)
            return NO
        if k == "vector":
            if not isinstance(arg, Vector):
                return NO
            length = p.get("len")
            if length is not None and length != arg.length:
                return NO
            return self._dtype(p.get("dtype"), arg.dtype)
        if k == "matrix":
            if not isinstance(arg, Matrix):
                return NO
            rows, cols = (p.get("shape") or [None, None])[:2]
            if (rows is not None and rows != arg.rows) or (cols is not None and cols != arg.cols):
                return NO
            return self._dtype(p.get("dtype"), arg.dtype)
        if k == "quat":
            return self._dtype(p.get("dtype"), arg.dtype) if isinstance(arg, Quaternion) else NO
        if k == "transform":
            return self._dtype(p.get("dtype"), arg.dtype) if isinstance(arg, Transform) else NO
        if k == "array":
            if not isinstance(arg, Array):
                return NO
            compatible = self.array_kinds.get(str(p.get("kind")))
            if compatible is None or arg.kind not in self.array_kinds:
                kind_ok = MAYBE
            else:
                kind_ok = YES if arg.kind in compatible else NO
            # Warp ignores ndim when it matches arrays against builtin parameters
            return min(kind_ok, self._dtype(p.get("dtype"), arg.dtype))
        if k == "tile":
            if not isinstance(arg, Tile):
                return NO
            # Warp compares the tile dtype only (not the shape, not the storage)
            return self._dtype(p.get("dtype"), arg.dtype)
        if k == "tuple":
            if not isinstance(arg, TupleType):
                return NO
            items = p.get("items")
            if items is None:
                return YES
            if p.get("ellipsis"):
                if not items:
                    return MAYBE
                return min((self.match(items[0], e) for e in arg.elements), default=YES)
            if len(items) != len(arg.elements):
                return NO
            return min((self.match(i, e) for i, e in zip(items, arg.elements, strict=True)), default=YES)
        if k == "py":
            # the model has no string type: a string argument is UNKNOWN, handled above
            return NO
        # "other" (query objects, textures, shape_t, ...), "callable" and anything new: the model
        # cannot express those; only plain numeric values are surely not one of them.
        return NO if isinstance(arg, _PLAIN_VALUES) else MAYBE

    def _dtype(self, p: Any, arg: WarpType) -> int:
        if not isinstance(p, dict):
            return MAYBE
        if isinstance(arg, UnknownType):
            return YES if p.get("k") == "any" else MAYBE
        k = p.get("k")
        if k == "any":
            return YES
        if k in ("scalar", "generic"):
            if isinstance(arg, Scalar):
                return _match_scalar_param(p, arg)
            # an unconstrained TypeVar (not Float/Int/Scalar) could stand for anything
            return MAYBE if k == "generic" and str(p.get("n")) not in _GENERIC_SETS else NO
        return self.match(p, arg)


# --------------------------------------------------------------------------------------------
# Binding call arguments to a signature (Python's rules, as inspect.Signature.bind)
# --------------------------------------------------------------------------------------------


@dataclass(eq=False, repr=False)
class _Binding:
    """Call arguments bound to a signature's parameters, or why they do not bind."""

    bound: dict[str, WarpType]
    extra_positional: list[WarpType]
    extra_keyword: dict[str, WarpType]
    error: str | None = None


_PSig = tuple[str, str, bool]  # (name, kind, has_default)


def _bind(params: Sequence[_PSig], args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> _Binding:
    positional = [p for p in params if p[1] == POSITIONAL_OR_KEYWORD]
    has_var_pos = any(p[1] == VAR_POSITIONAL for p in params)
    has_var_kw = any(p[1] == VAR_KEYWORD for p in params)
    b = _Binding({}, [], {})
    for i, a in enumerate(args):
        if i < len(positional):
            b.bound[positional[i][0]] = a
        elif has_var_pos:
            b.extra_positional.append(a)
        else:
            b.error = f"takes at most {len(positional)} positional arguments, got {len(args)}"
            return b
    by_name = {p[0]: p for p in params if p[1] in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY)}
    for key, value in kwargs.items():
        if key not in by_name:
            if has_var_kw:
                b.extra_keyword[key] = value
                continue
            b.error = f"unexpected keyword argument '{key}'"
            return b
        if key in b.bound:
            b.error = f"multiple values for argument '{key}'"
            return b
        b.bound[key] = value
    missing = [
        p[0]
        for p in params
        if p[1] in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY) and not p[2] and p[0] not in b.bound
    ]
    if missing:
        b.error = (
            "missing required argument"
            + ("s " if len(missing) > 1 else " ")
            + ", ".join(f"'{m}'" for m in missing)
        )
    return b


def _overload_psigs(o: Overload) -> list[_PSig]:
    return [(p.name, p.kind, p.has_default) for p in o.params]


# --------------------------------------------------------------------------------------------
# warp/__init__.pyi return annotations, evaluated against the call's argument types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Stub:
    """A ``warp/__init__.pyi`` stub of a builtin: its parameters and return annotation."""

    params: tuple[tuple[str, str, Any, bool], ...]  # (name, kind, annotation tree, has_default)
    returns: Any
    returns_text: str | None

    def psigs(self) -> list[_PSig]:
        return [(n, k, d) for n, k, _, d in self.params]


_CONFLICT = object()
_PY_SCALARS = {"int": "int32", "float": "float32", "bool": "bool", "half": "float16"}
_NAMED_SCALARS = frozenset((*_NUMERIC, "bool"))


def _ann_scalar(name: str) -> str | None:
    if name in _PY_SCALARS:
        return _PY_SCALARS[name]
    if name in _NAMED_SCALARS:
        return name
    return None


def _is_typevar_name(name: str) -> bool:
    return name in _GENERIC_SETS or name in (
        "DType",
        "T",
        "Length",
        "Rows",
        "Cols",
        "Shape",
        "NDim",
        "Capacity",
    )


class _StubEvaluator:
    """Unify stub annotations with argument types, then evaluate the return annotation."""

    def __init__(self) -> None:
        self.bindings: dict[str, Any] = {}

    def _bind(self, name: str, value: Any) -> None:
        old = self.bindings.get(name)
        if old is None:
            self.bindings[name] = value
        elif old is not _CONFLICT and old != value:
            self.bindings[name] = _CONFLICT

    def unify(self, tree: Any, arg: WarpType) -> int:
        if not isinstance(tree, list) or not tree:
            return MAYBE
        tag = tree[0]
        if tag == "n" and tree[1] == "Any":
            return YES
        if isinstance(arg, UnknownType):
            return MAYBE
        if tag == "u":
            saved = dict(self.bindings)
            results: list[tuple[int, dict[str, Any]]] = []
            for alt in tree[1]:
                self.bindings = dict(saved)
                r = self.unify(alt, arg)
                if r != NO:
                    results.append((r, self.bindings))
            self.bindings = saved
            if not results:
                return NO
            if len(results) == 1:
                self.bindings = results[0][1]
            return max(r for r, _ in results)
        if tag == "n":
            name = str(tree[1])
            scalar = _ann_scalar(name)
            if scalar is not None:
                if isinstance(arg, Scalar):
                    return YES if _scalar_name(arg) == scalar else NO
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            allowed = _GENERIC_SETS.get(name)
            if allowed is not None:
                if not isinstance(arg, Scalar):
                    return NO if isinstance(arg, _DEFINITE) else MAYBE
                if _scalar_name(arg) not in allowed:
                    return NO
                self._bind(name, Scalar(_scalar_name(arg)))
                return YES
            if name in ("DType", "T"):
                self._bind(name, arg)
                return YES
            if name == "str":
                return MAYBE
            return MAYBE
        if tag != "s":
            return MAYBE
        base, targs = str(tree[1]), list(tree[2])
        if base == "Vector" and len(targs) == 2:
            if not isinstance(arg, Vector):
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            return min(self.unify(targs[0], arg.dtype), self._unify_int(targs[1], arg.length))
        if base == "Matrix" and len(targs) == 3:
            if not isinstance(arg, Matrix):
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            return min(
                self.unify(targs[0], arg.dtype),
                self._unify_int(targs[1], arg.rows),
                self._unify_int(targs[2], arg.cols),
            )
        if base in ("Quaternion", "Transformation") and len(targs) == 1:
            cls = Quaternion if base == "Quaternion" else Transform
            if not isinstance(arg, cls):
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            return self.unify(targs[0], arg.dtype)
        if base in ("Array", "FabricArray", "IndexedFabricArray") and targs:
            if not isinstance(arg, Array):
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            return max(MAYBE, self.unify(targs[0], arg.dtype))
        if base == "Tile" and targs:
            if not isinstance(arg, Tile):
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            r = self.unify(targs[0], arg.dtype)
            if len(targs) > 1 and targs[1] == ["n", "Shape"] and arg.shape is not None:
                self._bind("Shape", arg.shape)
            return r
        if base == "type" and len(targs) == 1:
            if isinstance(arg, TypeRef):
                return self.unify(targs[0], arg.of)
            return NO if isinstance(arg, _DEFINITE) else MAYBE
        if base == "tuple":
            if not isinstance(arg, TupleType):
                return NO if isinstance(arg, _DEFINITE) else MAYBE
            return MAYBE
        return MAYBE

    def _unify_int(self, tree: Any, value: int) -> int:
        if not isinstance(tree, list) or not tree:
            return MAYBE
        if tree[0] == "n":
            if tree[1] == "Any" or tree[1] == "int":
                return YES
            if _is_typevar_name(str(tree[1])):
                self._bind(str(tree[1]), value)
                return YES
            return MAYBE
        if tree[0] == "s" and tree[1] == "Literal":
            values = [c[1] for c in tree[2] if isinstance(c, list) and c and c[0] == "c"]
            return YES if value in values else NO
        return MAYBE

    # ---- evaluation --------------------------------------------------------------------------

    def _scalar(self, tree: Any) -> Scalar | None:
        t = self.evaluate(tree)
        return t if isinstance(t, Scalar) else None

    def _int(self, tree: Any) -> int | None:
        if not isinstance(tree, list) or not tree:
            return None
        if tree[0] == "s" and tree[1] == "Literal" and len(tree[2]) == 1:
            c = tree[2][0]
            if isinstance(c, list) and c[0] == "c" and isinstance(c[1], int) and not isinstance(c[1], bool):
                return int(c[1])
            return None
        if tree[0] == "n" and _is_typevar_name(str(tree[1])):
            v = self.bindings.get(str(tree[1]))
            return v if isinstance(v, int) and not isinstance(v, bool) else None
        return None

    def evaluate(self, tree: Any) -> WarpType:
        if not isinstance(tree, list) or not tree:
            return UNKNOWN
        tag = tree[0]
        if tag == "n":
            name = str(tree[1])
            scalar = _ann_scalar(name)
            if scalar is not None:
                return Scalar(scalar)
            if _is_typevar_name(name):
                v = self.bindings.get(name)
                if isinstance(v, _WARP_TYPE_CLASSES):
                    return v
                return UNKNOWN
            # a concrete type the stub names (``quatf``, ``transformf``, ``mat33f``, ``vec3f``)
            named = named_warp_type(name)
            return named if isinstance(named, Vector | Matrix | Quaternion | Transform) else UNKNOWN
        if tag == "u":
            values = [self.evaluate(alt) for alt in tree[1]]
            return values[0] if values and all(v == values[0] for v in values) else UNKNOWN
        if tag != "s":
            return UNKNOWN
        base, targs = str(tree[1]), list(tree[2])
        if base == "Vector" and len(targs) == 2:
            dtype, length = self._scalar(targs[0]), self._int(targs[1])
            return Vector(length, dtype) if dtype is not None and length is not None else UNKNOWN
        if base == "Matrix" and len(targs) == 3:
            dtype, rows, cols = self._scalar(targs[0]), self._int(targs[1]), self._int(targs[2])
            if dtype is None or rows is None or cols is None:
                return UNKNOWN
            return Matrix(rows, cols, dtype)
        if base in ("Quaternion", "Transformation") and len(targs) == 1:
            dtype = self._scalar(targs[0])
            if dtype is None:
                return UNKNOWN
            return Quaternion(dtype) if base == "Quaternion" else Transform(dtype)
        if base == "Tile" and targs:
            dtype_t = self.evaluate(targs[0])
            return Tile(dtype_t, self._tile_shape(targs[1] if len(targs) > 1 else None))
        if base == "tuple":
            if any(t == ["..."] for t in targs):
                return UNKNOWN
            elems = tuple(self.evaluate(t) for t in targs)
            return TupleType(elems)
        return UNKNOWN

    def _tile_shape(self, tree: Any) -> tuple[int | None, ...] | None:
        if not isinstance(tree, list) or not tree:
            return None
        if tree[0] == "n" and tree[1] == "Shape":
            v = self.bindings.get("Shape")
            return v if isinstance(v, tuple) else None
        if tree[0] == "s" and tree[1] == "tuple":
            if any(t == ["..."] for t in tree[2]):
                return None
            return tuple(self._int(t) for t in tree[2])
        return None


_WARP_TYPE_CLASSES = (
    UnknownType,
    Scalar,
    Vector,
    Matrix,
    Quaternion,
    Transform,
    Struct,
    Array,
    Tile,
    TypeRef,
    TupleType,
)


def _serialised_to_warp(t: TypeDict | None) -> WarpType:
    """A concrete serialised type as a model type; UNKNOWN for anything generic or unmodelled."""
    if not isinstance(t, dict):
        return UNKNOWN
    k = t.get("k")
    if k == "scalar":
        return Scalar(str(t["n"]))
    if k in ("vector", "matrix", "quat", "transform"):
        dtype = _serialised_to_warp(t.get("dtype"))
        if not isinstance(dtype, Scalar):
            return UNKNOWN
        if k == "vector":
            length = t.get("len")
            return Vector(length, dtype) if isinstance(length, int) else UNKNOWN
        if k == "matrix":
            shape = t.get("shape") or [None, None]
            if not all(isinstance(s, int) for s in shape[:2]):
                return UNKNOWN
            return Matrix(int(shape[0]), int(shape[1]), dtype)
        return Quaternion(dtype) if k == "quat" else Transform(dtype)
    if k == "array":
        ndim = t.get("ndim")
        if not isinstance(ndim, int):
            return UNKNOWN
        return Array(_serialised_to_warp(t.get("dtype")), ndim, str(t.get("kind") or "array"))
    if k == "multi":
        return TupleType(tuple(_serialised_to_warp(x) for x in t.get("items") or []))
    return UNKNOWN


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


def _require(cond: bool, what: str) -> None:
    if not cond:
        raise TableFormatError(what)


def _validate_record(rec: Any, n_types: int) -> None:
    _require(isinstance(rec, dict) and isinstance(rec.get("name"), str), "builtin record")
    ovls = rec.get("ovl")
    _require(isinstance(ovls, list), "overload list")
    for o in ovls:
        _require(isinstance(o, dict) and isinstance(o.get("p"), list), "overload record")
        r = o.get("r")
        _require(r is None or (type(r) is int and 0 <= r < n_types), "return type index")
        for p in o["p"]:
            _require(
                type(p) is list
                and len(p) == 5
                and type(p[0]) is str
                and type(p[1]) is int
                and 0 <= p[1] < 4
                and type(p[2]) is int
                and 0 <= p[2] < n_types,
                "parameter record",
            )


def _decode_param(raw: list[Any], types: list[TypeDict], memo: dict[tuple[Any, ...], ParamSig]) -> ParamSig:
    key = tuple(raw)
    p = memo.get(key)
    if p is None:
        name, kind, idx, has_default, ok = raw
        p = ParamSig(name, types[idx], bool(has_default), _KINDS[kind], bool(ok))
        memo[key] = p
    return p


def _decode_stub(raw: Any) -> _Stub:
    _require(isinstance(raw, dict) and isinstance(raw.get("p"), list), "stub record")
    params: list[tuple[str, str, Any, bool]] = []
    for p in raw["p"]:
        _require(
            isinstance(p, list) and len(p) == 4 and isinstance(p[0], str) and p[1] in (0, 1, 2, 3),
            "stub param",
        )
        params.append((p[0], _KINDS[p[1]], p[2], bool(p[3])))
    rs = raw.get("rs")
    return _Stub(tuple(params), raw.get("r"), rs if isinstance(rs, str) else None)


def _packer() -> Callable[[Any], bytes]:
    import msgpack  # type: ignore[import-untyped,unused-ignore]

    pack: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack
    return pack


def _unpack(packed: bytes) -> Any:
    import msgpack  # type: ignore[import-untyped,unused-ignore]

    return msgpack.unpackb(packed, raw=False, strict_map_key=False)


class BuiltinTable:
    """Warp's builtins (kernel-scope functions) and the public names of the ``warp`` module."""

    def __init__(self, data: Mapping[str, Any], origin: str, *, records_checked: bool = False) -> None:
        """Decode the dumped data; raises :class:`TableFormatError` on anything unexpected.

        ``records_checked``: these very bytes passed the per-record checks before (the loader's
        sidecar digest), so only the top level is checked again."""
        if not isinstance(data, Mapping):
            raise TableFormatError("top level")
        _require(data.get("format") == FORMAT, "format version")
        version = data.get("warp_version")
        types = data.get("types")
        records = data.get("builtins")
        attrs = data.get("attrs")
        kcall = data.get("kcall")
        array_kinds = data.get("array_kinds")
        pyi = data.get("pyi")
        if not isinstance(version, str):
            raise TableFormatError("warp_version")
        if not isinstance(types, list) or not all(isinstance(t, dict) and "k" in t for t in types):
            raise TableFormatError("types")
        if not isinstance(records, list) or not records:
            raise TableFormatError("builtins")
        if not isinstance(attrs, dict) or not all(isinstance(v, str) for v in attrs.values()):
            raise TableFormatError("attrs")
        if not isinstance(kcall, dict) or not isinstance(array_kinds, dict) or not isinstance(pyi, dict):
            raise TableFormatError("kcall/array_kinds/pyi")

        self.warp_version: str = str(version)
        self.origin: str = origin
        # what a result cache keys on: a cache file's digest (the loader sets it), else what it says
        self.identity: str = f"{origin}:{data.get('dist_version', version)}:{len(records)}"
        extractor = data.get("extractor")
        self.extractor_id: str | None = extractor if isinstance(extractor, str) else None
        dist = data.get("dist_version")
        # the warp-lang distribution version (package metadata); usually equal to warp_version
        self.dist_version: str = dist if isinstance(dist, str) else self.warp_version
        self._types: list[TypeDict] = types
        self._param_memo: dict[tuple[Any, ...], ParamSig] = {}
        # records are validated now and turned into objects on first use (most runs touch few); until
        # then each is kept packed, as are the stubs: decoded, they are 2.8 MiB of small objects in every
        # process (a check's pool workers, the language server), packed 0.2 (packing takes 3 ms)
        pack = _packer()
        self._raw: dict[str, bytes] = {}
        for rec in records:
            if not records_checked:
                _validate_record(rec, len(types))
            self._raw[rec["name"]] = pack(rec)
        self._built: dict[str, Builtin] = {}
        self._attrs: dict[str, str] = {str(k): str(v) for k, v in attrs.items()}
        self._kcall: dict[str, str] = {str(k): str(v) for k, v in kcall.items() if isinstance(v, str)}
        self._raw_stubs: dict[str, bytes] = {str(k): pack(v) for k, v in pyi.items()}
        self._stubs: dict[str, tuple[_Stub, ...]] = {}
        self._matcher = _Matcher(
            {str(k): tuple(str(x) for x in v) for k, v in array_kinds.items() if isinstance(v, list)}
        )
        self._names = sorted(set(self._raw) | set(self._attrs))
        self._shapes: dict[int, tuple[_PSig, ...]] = {}
        self._arity: dict[str, str] = {}
        self._memo: dict[tuple[Any, ...], CallCheck | WarpType] = {}

    def __repr__(self) -> str:
        return f"<BuiltinTable warp {self.warp_version} ({self.origin}): {len(self._raw)} builtins>"

    # ---- lookup --------------------------------------------------------------------------------

    @property
    def builtin_names(self) -> list[str]:
        return sorted(self._raw)

    @property
    def warp_attribute_names(self) -> list[str]:
        return sorted(self._attrs)

    def __len__(self) -> int:
        return len(self._raw)

    def get(self, name: str) -> Builtin | None:
        b = self._built.get(name)
        if b is None:
            packed = self._raw.get(name)
            if packed is None:
                return None
            b = self._build(_unpack(packed))
            self._built[name] = b
        return b

    def _build(self, rec: dict[str, Any]) -> Builtin:
        types = self._types
        overloads: list[Overload] = []
        for o in rec["ovl"]:
            r = o.get("r")
            ra = o.get("ra")
            overloads.append(
                Overload(
                    params=tuple(_decode_param(p, types, self._param_memo) for p in o["p"]),
                    return_type=None if r is None else types[r],
                    return_annotation=ra if isinstance(ra, str) else None,
                    variadic=bool(o.get("v")),
                    hidden=bool(o.get("h")),
                    removed=str(o["rm"]) if isinstance(o.get("rm"), str) else None,
                )
            )
        return Builtin(
            name=rec["name"],
            overloads=tuple(overloads),
            namespace=str(rec.get("ns") or ""),
            export=bool(rec.get("export")),
            hidden=bool(rec.get("hidden")),
            python_defined=bool(rec.get("user")),
        )

    def has_builtin(self, name: str) -> bool:
        return name in self._raw

    def warp_attribute_kind(self, name: str) -> str | None:
        """Coarse kind of ``warp.<name>``: ``builtin_function``, ``warp_function``, ``type``,
        ``python_function``, ``class``, ``module`` or ``constant``; None when Warp has no such name.

        Builtins that exist only inside kernels (``tile_load``, ``tid``...) are not attributes of
        the ``warp`` module at Python scope but resolve in kernels: they count as ``builtin_function``.
        A name can be both a host function and a builtin (``zeros``, ``array``): use
        :meth:`kernel_call_target` to learn what ``wp.<name>(...)`` means inside a kernel.
        """
        kind = self._attrs.get(name)
        if kind is None and name in self._raw:
            return "builtin_function"
        return kind

    def kernel_call_target(self, name: str) -> str | None:
        """The builtin that ``wp.<name>(...)`` calls inside a kernel (``vec3`` -> ``vector``,
        ``float32`` -> ``float32``); None when the name is not callable in kernels (``launch``)."""
        target = self._kcall.get(name)
        if target is not None:
            return target
        return name if name in self._raw else None

    def callable_in_kernels(self, name: str) -> bool:
        """Whether ``wp.<name>(...)`` may appear in a kernel: a builtin, a type constructor, or a
        ``@wp.func`` that Warp exports (``quat_between_vectors``, kind ``warp_function``)."""
        return self.kernel_call_target(name) is not None or self._attrs.get(name) == "warp_function"

    def closest(self, name: str, n: int = 3) -> list[str]:
        """Similar names among the builtins and the ``warp`` attributes (for "did you mean")."""
        import difflib  # only for a name that is not found: start-up skips it

        return difflib.get_close_matches(name, self._names, n=n)

    # ---- calls -------------------------------------------------------------------------------

    def _match_overload(
        self,
        o: Overload,
        args: Sequence[WarpType],
        kwargs: Mapping[str, WarpType],
        bindings: dict[tuple[_PSig, ...], _Binding],
    ) -> tuple[int, str | None]:
        shape = self._shape(o)
        b = bindings.get(shape)
        if b is None:
            b = bindings[shape] = _bind(shape, args, kwargs)
        if b.error is not None:
            return _NO_ARITY, b.error
        if o.variadic:
            return YES, None  # Warp skips type checks on variadic overloads (value_func validates)
        result = YES
        for p in o.params:
            if p.kind in (VAR_POSITIONAL, VAR_KEYWORD):
                if b.extra_positional or b.extra_keyword:
                    result = min(result, MAYBE)
                continue
            if p.name in b.bound:
                result = min(result, self._matcher.match(p.type, b.bound[p.name]))
            elif not p.default_matches:
                result = NO
            if result == NO:
                return NO, None
        return result, None

    def _resolve(
        self, b: Builtin, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]
    ) -> list[tuple[Overload, int, str | None]]:
        """Overloads in Warp's order with their outcome, up to the one Warp would surely pick."""
        out: list[tuple[Overload, int, str | None]] = []
        # many overloads share a call shape (sqrt: one per scalar type): bind once per shape
        bindings: dict[tuple[_PSig, ...], _Binding] = {}
        for o in b.overloads:
            r, err = self._match_overload(o, args, kwargs, bindings)
            out.append((o, r, err))
            if r == YES or o.variadic:
                # the first variadic overload reached is taken without type checks: it ends the search
                break
        return out

    def _shape(self, o: Overload) -> tuple[_PSig, ...]:
        shape = self._shapes.get(id(o))
        if shape is None:
            shape = self._shapes[id(o)] = tuple(_overload_psigs(o))
        return shape

    def _memo_key(
        self, kind: str, name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]
    ) -> tuple[Any, ...] | None:
        key = (kind, name, tuple(args), tuple(kwargs.items()))
        try:
            hash(key)
        except TypeError:
            return None
        if len(self._memo) > _MEMO_LIMIT:
            self._memo.clear()
        return key

    def check_call(
        self, name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType] | None = None
    ) -> CallCheck:
        """Would Warp find an overload of builtin ``name`` for these argument types?"""
        kwargs = kwargs or {}
        key = self._memo_key("check", name, args, kwargs)
        if key is not None:
            hit = self._memo.get(key)
            if isinstance(hit, CallCheck):
                return hit
        result = self._check_call(name, args, kwargs)
        if key is not None:
            self._memo[key] = result
        return result

    def _check_call(self, name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> CallCheck:
        b = self.get(name)
        if b is None:
            return CallCheck(CallStatus.UNKNOWN, f"'{name}' is not a Warp builtin")
        results = self._resolve(b, args, kwargs)
        outcomes = [r for _, r, _ in results]
        if YES in outcomes:
            chosen = tuple(o for o, r, _ in results if r != NO and r != _NO_ARITY)
            removed = {o.removed for o in chosen}
            if None not in removed:
                return CallCheck(
                    CallStatus.REMOVED,
                    f"wp.{name}() has been removed (Warp {min(v for v in removed if v)})"
                    + (f"; {_REMOVED_ADVICE[name]}" if name in _REMOVED_ADVICE else ""),
                    signatures=b.signatures(),
                )
            refused = _value_check(name, args, kwargs)
            if refused is not None:
                return CallCheck(
                    CallStatus.BAD_VALUES, refused, expected_arity=None, signatures=b.signatures()
                )
            return CallCheck(CallStatus.OK, matched=chosen)
        if MAYBE in outcomes:
            return CallCheck(CallStatus.UNKNOWN, "argument types too uncertain to decide")
        shown = _describe_args(args, kwargs)
        arity = self._arity.get(name)
        if arity is None:
            arity = self._arity[name] = b.arity_description()
        if NO in outcomes:
            return CallCheck(
                CallStatus.BAD_TYPES,
                f"no overload of wp.{name} accepts arguments ({shown})",
                expected_arity=arity,
                signatures=b.signatures(),
            )
        count = len(args) + len(kwargs)
        errors = {err for _, r, err in results if err is not None}
        detail = ""
        if len(errors) == 1:
            detail = f" ({next(iter(errors))})"
        elif any(lo <= count and (hi is None or count <= hi) for lo, hi in (o.arity() for o in b.overloads)):
            kw_errors = sorted(
                e for e in errors if "keyword" in e or "multiple values" in e or "missing" in e
            )
            if kw_errors:
                detail = f" ({kw_errors[0]})"
        return CallCheck(
            CallStatus.BAD_ARITY,
            f"wp.{name} takes {arity}, got {count}{detail}",
            expected_arity=arity,
            signatures=b.signatures(),
        )

    def return_type(
        self, name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType] | None = None
    ) -> WarpType:
        """The type of ``wp.<name>(*args, **kwargs)`` in a kernel; UNKNOWN whenever unsure."""
        kwargs = kwargs or {}
        key = self._memo_key("return", name, args, kwargs)
        if key is not None and key in self._memo:
            hit = self._memo[key]
            if isinstance(hit, _WARP_TYPE_CLASSES):
                return hit
        result = self._return_type(name, args, kwargs)
        if key is not None:
            self._memo[key] = result
        return result

    def _return_type(self, name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
        b = self.get(name)
        if b is None:
            return UNKNOWN
        special = _SPECIAL_RETURNS.get(name)
        if special is not None:
            # Warp computes these in code (a value_func) that neither the registry's data nor the stubs
            # express; only for a call Warp accepts
            return special(args, kwargs) if self.check_call(name, args, kwargs).ok else UNKNOWN
        candidates = [o for o, r, _ in self._resolve(b, args, kwargs) if r in (YES, MAYBE)]
        if not candidates:
            return UNKNOWN
        result: WarpType | None = None
        for o in candidates:
            t = self._overload_return(b, o, args, kwargs)
            if isinstance(t, UnknownType) or (result is not None and t != result):
                return UNKNOWN
            result = t
        return UNKNOWN if result is None else result

    def _overload_return(
        self, b: Builtin, o: Overload, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]
    ) -> WarpType:
        if o.return_type is not None:
            return _serialised_to_warp(o.return_type)
        return self._stub_return(b.name, args, kwargs)

    def _stub_return(self, name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
        result: WarpType | None = None
        for stub in self._stubs_of(name):
            bind = _bind(stub.psigs(), args, kwargs)
            if bind.error is not None:
                continue
            ev = _StubEvaluator()
            outcome = YES
            for pname, kind, tree, _ in stub.params:
                if kind in (VAR_POSITIONAL, VAR_KEYWORD):
                    values = (
                        bind.extra_positional if kind == VAR_POSITIONAL else list(bind.extra_keyword.values())
                    )
                    for v in values:
                        outcome = min(outcome, ev.unify(tree, v))
                elif pname in bind.bound:
                    outcome = min(outcome, ev.unify(tree, bind.bound[pname]))
                if outcome == NO:
                    break
            if outcome == NO:
                continue
            t = ev.evaluate(stub.returns)
            if isinstance(t, Tile):
                t = self._tile_storage(t, stub, bind)
            if isinstance(t, UnknownType) or (result is not None and t != result):
                return UNKNOWN
            result = t
        return UNKNOWN if result is None else result

    def _stubs_of(self, name: str) -> tuple[_Stub, ...]:
        stubs = self._stubs.get(name)
        if stubs is None:
            packed = self._raw_stubs.get(name)
            raw = _unpack(packed) if packed is not None else None
            try:
                stubs = tuple(_decode_stub(x) for x in raw) if isinstance(raw, list) else ()
            except TableFormatError:
                stubs = ()  # a malformed stub only costs return types: they become UNKNOWN
            self._stubs[name] = stubs
        return stubs

    @staticmethod
    def _tile_storage(t: Tile, stub: _Stub, bind: _Binding) -> WarpType:
        """A returned tile's storage is only sure for creators: in registers unless asked otherwise.

        Operations on tiles can return views that alias shared memory (``tile_transpose``,
        ``tile_view``...), and their storage depends on Warp's lowering: UNKNOWN for those.
        """
        if any(_mentions(tree, "Tile") for _, _, tree, _ in stub.params):
            return UNKNOWN
        if any(p[0] == "storage" for p in stub.params) and "storage" in bind.bound:
            return UNKNOWN
        return t


# --------------------------------------------------------------------------------------------
# What Warp's value_funcs compute and check, for the builtins whose registry data and stubs say
# only ``Any`` (mirrors warp/_src/builtins.py; every rule here answers UNKNOWN when unsure)
# --------------------------------------------------------------------------------------------

_REMOVED_ADVICE = {
    "select": "use wp.where(cond, value_if_true, value_if_false), which takes the two values in the "
    "other order",
    "matrix": "use wp.transform_compose(pos, rot, scale)",
}
_ATOMICS = frozenset(f"atomic_{op}" for op in ("add", "sub", "min", "max", "cas", "exch", "and", "or", "xor"))
_VALUE_TYPES = (Scalar, Vector, Matrix, Quaternion, Transform)


def _argument(
    args: Sequence[WarpType], kwargs: Mapping[str, WarpType], position: int, name: str
) -> WarpType | None:
    if name in kwargs:
        return kwargs[name]
    return args[position] if position < len(args) else None


def _plain(t: WarpType | None) -> bool:
    """A value of a fully known plain type (a scalar, vector, matrix, quaternion or transform)."""
    return isinstance(t, _VALUE_TYPES) and not isinstance(getattr(t, "dtype", None), UnknownType)


def _atomic_parts(
    name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]
) -> tuple[Array, WarpType] | None:
    """(the array, the value) of ``wp.atomic_<op>(arr, i[, j, ...], value)`` when every index is given
    (``atomic_cas`` has two values: the last one is compared here)."""
    if kwargs or len(args) < 3:
        return None
    array = args[0]
    if not isinstance(array, Array) or isinstance(array.dtype, UnknownType):
        return None
    values = 2 if name == "atomic_cas" else 1
    if len(args) - 1 - values != array.ndim:
        return None
    return array, args[-1]


def _value_check(name: str, args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> str | None:
    """Warp's error text when its value_func refuses arguments that overload matching accepted."""
    if name == "where":
        when_true = _argument(args, kwargs, 1, "value_if_true")
        when_false = _argument(args, kwargs, 2, "value_if_false")
        if _plain(when_true) and _plain(when_false) and when_true != when_false:
            assert when_true is not None and when_false is not None
            return (
                f"where() true value type ({warp_type_name(when_true)}) must be of the same type as the "
                f"false type ({warp_type_name(when_false)})"
            )
    elif name in _ATOMICS and name not in ("atomic_and", "atomic_or", "atomic_xor"):
        parts = _atomic_parts(name, args, kwargs)
        if parts is not None:
            array, value = parts
            if _plain(value) and _plain(array.dtype) and value != array.dtype:
                return (
                    f"{name}() value argument type ({warp_type_name(value)}) must be of the same type as "
                    f"the array ({warp_type_name(array.dtype)})"
                )
    return None


def _where_return(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
    when_true = _argument(args, kwargs, 1, "value_if_true")
    when_false = _argument(args, kwargs, 2, "value_if_false")
    if (
        when_true is not None
        and when_true == when_false
        and (_plain(when_true) or isinstance(when_true, Struct))
    ):
        return when_true
    return UNKNOWN


def _atomic_return(name: str) -> Callable[[Sequence[WarpType], Mapping[str, WarpType]], WarpType]:
    def value(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
        # the value_func returns the array's dtype (the element's old value)
        parts = _atomic_parts(name, args, kwargs)
        if parts is None or not _plain(parts[0].dtype):
            return UNKNOWN
        return parts[0].dtype

    return value


def _matrix_from_vectors(columns: bool) -> Callable[[Sequence[WarpType], Mapping[str, WarpType]], WarpType]:
    def value(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
        if kwargs or not args or not all(isinstance(a, Vector) for a in args):
            return UNKNOWN
        first = args[0]
        assert isinstance(first, Vector)
        if any(a != first for a in args):
            return UNKNOWN
        count = len(args)
        return (
            Matrix(first.length, count, first.dtype) if columns else Matrix(count, first.length, first.dtype)
        )

    return value


def _vector_norm(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
    """``norm_l1`` / ``norm_l2`` / ``norm_huber`` / ``norm_pseudo_huber``: Warp's own @wp.funcs over a
    float32 vector (their ``delta`` is a float32), returning a float32."""
    v = _argument(args, kwargs, 0, "v")
    return FLOAT32 if isinstance(v, Vector) and v.dtype == FLOAT32 else UNKNOWN


def _same_vector(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
    """``smooth_normalize(v)``: a float32 vector of the same length."""
    v = _argument(args, kwargs, 0, "v")
    return v if isinstance(v, Vector) and v.dtype == FLOAT32 else UNKNOWN


def _transpose(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> WarpType:
    """``transpose(m)`` of any shape (the registry's concrete overloads stop at 4x4)."""
    m = _argument(args, kwargs, 0, "a")
    return Matrix(m.cols, m.rows, m.dtype) if isinstance(m, Matrix) and _plain(m) else UNKNOWN


_SPECIAL_RETURNS: dict[str, Callable[[Sequence[WarpType], Mapping[str, WarpType]], WarpType]] = {
    "transpose": _transpose,
    "where": _where_return,
    **{name: _atomic_return(name) for name in _ATOMICS},
    "matrix_from_cols": _matrix_from_vectors(columns=True),
    "matrix_from_rows": _matrix_from_vectors(columns=False),
    "norm_l1": _vector_norm,
    "norm_l2": _vector_norm,
    "norm_huber": _vector_norm,
    "norm_pseudo_huber": _vector_norm,
    "smooth_normalize": _same_vector,
}


def _mentions(tree: Any, name: str) -> bool:
    if isinstance(tree, list):
        return any(_mentions(x, name) for x in tree)
    return isinstance(tree, str) and tree == name


def _describe_args(args: Sequence[WarpType], kwargs: Mapping[str, WarpType]) -> str:
    return ", ".join([*(str(a) for a in args), *(f"{k}={v}" for k, v in kwargs.items())])
