"""Static Warp types as the kernel model sees them.

Every type is a small frozen dataclass; ``UNKNOWN`` is what inference returns whenever it
is not sure. Rules must treat ``UNKNOWN`` as "could be anything" and never fire on it.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOAT_SCALARS = ("float16", "float32", "float64")
INT_SCALARS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
SCALAR_NAMES = (*FLOAT_SCALARS, *INT_SCALARS, "bool")

# Python spellings Warp accepts as scalar annotations / dtypes
SCALAR_ALIASES = {
    "float": "float32",
    "int": "int32",
    "bool": "bool",
    "half": "float16",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    **{n: n for n in INT_SCALARS},
}

_VECTOR_SUFFIX = {
    "h": "float16",
    "f": "float32",
    "d": "float64",
    "i": "int32",
    "ui": "uint32",
    "b": "int8",
    "ub": "uint8",
    "s": "int16",
    "us": "uint16",
    "l": "int64",
    "ul": "uint64",
}


@dataclass(frozen=True)
class UnknownType:
    """A type the checker could not work out (printed ``?``)."""

    def __str__(self) -> str:
        return "?"


UNKNOWN = UnknownType()


@dataclass(frozen=True)
class Scalar:
    """A Warp scalar type such as ``float32`` or ``int64``."""

    name: str

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_SCALARS

    @property
    def is_int(self) -> bool:
        return self.name in INT_SCALARS

    @property
    def byte_size(self) -> int:
        if self.name == "bool":
            return 1
        digits = "".join(c for c in self.name if c.isdigit())
        return int(digits) // 8

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Vector:
    """A Warp vector type of ``length`` elements of ``dtype``."""

    length: int
    dtype: Scalar

    @property
    def byte_size(self) -> int:
        return self.length * self.dtype.byte_size

    def __str__(self) -> str:
        return f"vector(length={self.length}, dtype={self.dtype})"


@dataclass(frozen=True)
class Matrix:
    """A Warp matrix type of ``rows`` x ``cols`` elements of ``dtype``."""

    rows: int
    cols: int
    dtype: Scalar

    @property
    def byte_size(self) -> int:
        return self.rows * self.cols * self.dtype.byte_size

    def __str__(self) -> str:
        return f"matrix(shape=({self.rows}, {self.cols}), dtype={self.dtype})"


@dataclass(frozen=True)
class Quaternion:
    """A Warp quaternion of ``dtype``."""

    dtype: Scalar

    @property
    def byte_size(self) -> int:
        return 4 * self.dtype.byte_size

    def __str__(self) -> str:
        return f"quaternion(dtype={self.dtype})"


@dataclass(frozen=True)
class Transform:
    """A Warp transform of ``dtype``."""

    dtype: Scalar

    @property
    def byte_size(self) -> int:
        return 7 * self.dtype.byte_size

    def __str__(self) -> str:
        return f"transformation(dtype={self.dtype})"


@dataclass(frozen=True)
class Struct:
    """A ``@wp.struct`` class, by name."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Array:
    """A Warp array of ``dtype`` with ``ndim`` dimensions."""

    dtype: WarpType
    ndim: int = 1
    kind: str = "array"  # array, indexedarray, fabricarray, ...

    def __str__(self) -> str:
        return f"{self.kind}(dtype={self.dtype}, ndim={self.ndim})"


@dataclass(frozen=True)
class Tile:
    """A Warp tile of ``dtype`` and ``shape``."""

    dtype: WarpType
    # None for an extent the model could not fold to a constant
    shape: tuple[int | None, ...] | None = None
    storage: str = "register"

    def __str__(self) -> str:
        shape = (
            "?"
            if self.shape is None
            else "(" + ", ".join("?" if s is None else str(s) for s in self.shape) + ")"
        )
        return f"tile(dtype={self.dtype}, shape={shape})"


@dataclass(frozen=True)
class TypeRef:
    """The type object itself used as a value, e.g. ``wp.float16`` in ``dtype=wp.float16``."""

    of: WarpType

    def __str__(self) -> str:
        return f"type[{self.of}]"


@dataclass(frozen=True)
class TupleType:
    """A tuple of Warp values."""

    elements: tuple[WarpType, ...]

    def __str__(self) -> str:
        return "tuple[" + ", ".join(map(str, self.elements)) + "]"


WarpType = (
    UnknownType
    | Scalar
    | Vector
    | Matrix
    | Quaternion
    | Transform
    | Struct
    | Array
    | Tile
    | TypeRef
    | TupleType
)

INT32 = Scalar("int32")
FLOAT32 = Scalar("float32")
FLOAT64 = Scalar("float64")
BOOL = Scalar("bool")


def python_value_type(value: object) -> WarpType:
    """The type Warp gives a Python literal or constant: bool, int -> int32, float -> float32."""
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT32
    if isinstance(value, float):
        return FLOAT32
    return UNKNOWN


def scalar_of(t: WarpType) -> Scalar | None:
    """The scalar type underlying ``t`` (a vector's or matrix's element type), if known."""
    if isinstance(t, Scalar):
        return t
    if isinstance(t, Vector | Matrix | Quaternion | Transform):
        return t.dtype
    return None


_NAME_SUFFIX = {
    "float16": "h",
    "float32": "f",
    "float64": "d",
    "int32": "i",
    "uint32": "ui",
    "int8": "b",
    "uint8": "ub",
    "int16": "s",
    "uint16": "us",
    "int64": "l",
    "uint64": "ul",
}


def warp_type_name(t: WarpType) -> str:
    """The name Warp prints for a type in its errors (``float16``, ``vec3f``, ``mat22h``, ``quatd``,
    ``array(ndim=1, dtype=float32)``)."""
    if isinstance(t, Scalar):
        return t.name
    if isinstance(t, Vector):
        return f"vec{t.length}{_NAME_SUFFIX.get(t.dtype.name, '')}"
    if isinstance(t, Matrix):
        return f"mat{t.rows}{t.cols}{_NAME_SUFFIX.get(t.dtype.name, '')}"
    if isinstance(t, Quaternion):
        return f"quat{_NAME_SUFFIX.get(t.dtype.name, '')}"
    if isinstance(t, Transform):
        return f"transform{_NAME_SUFFIX.get(t.dtype.name, '')}"
    if isinstance(t, Array):
        return f"{t.kind}(ndim={t.ndim}, dtype={warp_type_name(t.dtype)})"
    return str(t)


def is_concrete(t: WarpType) -> bool:
    """Whether ``t`` is fully known: no ``UNKNOWN`` anywhere in it (a generic annotation such as
    ``wp.array(dtype=Any)`` or ``typing.Any`` is not)."""
    if isinstance(t, UnknownType):
        return False
    if isinstance(t, Array | Tile):
        return is_concrete(t.dtype)
    if isinstance(t, TypeRef):
        return is_concrete(t.of)
    if isinstance(t, TupleType):
        return all(is_concrete(e) for e in t.elements)
    return True


def byte_size(t: WarpType) -> int | None:
    if isinstance(t, Scalar | Vector | Matrix | Quaternion | Transform):
        return t.byte_size
    return None


# name -> its type (the types are immutable values: one instance serves every ask)
_NAMED: dict[str, WarpType] = {}


def named_warp_type(name: str) -> WarpType:
    """Resolve a ``warp.<name>`` type name: ``float16``, ``vec3``, ``mat33d``, ``quatf``, ``transform``..."""
    found = _NAMED.get(name)
    if found is None:
        found = _named_warp_type(name)
        if len(_NAMED) < 4096:  # the names a workspace spells: bounded all the same (a long-lived server)
            _NAMED[name] = found
    return found


def _named_warp_type(name: str) -> WarpType:
    if name in SCALAR_ALIASES:
        return Scalar(SCALAR_ALIASES[name])
    for prefix, kind in (
        ("vec", "vec"),
        ("mat", "mat"),
        ("quat", "quat"),
        ("transform", "transform"),
        ("spatial_vector", "svec"),
        ("spatial_matrix", "smat"),
    ):
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix) :]
        if kind == "svec":
            return Vector(
                6, Scalar(_VECTOR_SUFFIX.get(rest, "float32")) if rest in ("", *_VECTOR_SUFFIX) else FLOAT32
            )
        if kind == "smat":
            return Matrix(
                6,
                6,
                Scalar(_VECTOR_SUFFIX.get(rest, "float32")) if rest in ("", *_VECTOR_SUFFIX) else FLOAT32,
            )
        if kind in ("quat", "transform"):
            if rest == "" or rest in _VECTOR_SUFFIX:
                dtype = Scalar(_VECTOR_SUFFIX[rest]) if rest else FLOAT32
                return Quaternion(dtype) if kind == "quat" else Transform(dtype)
            return UNKNOWN
        digits = "".join(c for c in rest if c.isdigit())
        suffix = rest[len(digits) :]
        if not digits or (suffix and suffix not in _VECTOR_SUFFIX):
            return UNKNOWN
        dtype = Scalar(_VECTOR_SUFFIX[suffix]) if suffix else FLOAT32
        if kind == "vec":
            return Vector(int(digits), dtype)
        if len(digits) == 2:
            return Matrix(int(digits[0]), int(digits[1]), dtype)
        return UNKNOWN
    return UNKNOWN
