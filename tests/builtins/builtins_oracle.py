"""Warp's code generator as the oracle for the builtin table (imported by these tests only)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from warp_harness.model.types import (
    BOOL,
    FLOAT32,
    INT32,
    Array,
    Matrix,
    Quaternion,
    Scalar,
    Tile,
    Transform,
    TupleType,
    TypeRef,
    Vector,
    WarpType,
)

_counter = itertools.count()


# Kernel arguments the oracle kernels receive: (name, annotation)
KERNEL_PARAMS = (
    ("f16", "wp.float16"),
    ("f32", "float"),
    ("f64", "wp.float64"),
    ("i32", "int"),
    ("i64", "wp.int64"),
    ("u8", "wp.uint8"),
    ("b", "wp.bool"),
    ("v2", "wp.vec2"),
    ("v3", "wp.vec3"),
    ("v3d", "wp.vec3d"),
    ("v3i", "wp.vec3i"),
    ("v4", "wp.vec4"),
    ("m22", "wp.mat22"),
    ("m33", "wp.mat33"),
    ("m33d", "wp.mat33d"),
    ("q", "wp.quat"),
    ("qd", "wp.quatd"),
    ("tf", "wp.transform"),
    ("a1", "wp.array(dtype=float)"),
    ("a2", "wp.array2d(dtype=float)"),
    ("ai", "wp.array(dtype=int)"),
    ("av3", "wp.array(dtype=wp.vec3)"),
)
KERNEL_PRELUDE = (
    "    tl = wp.tile_zeros(shape=(8, 8), dtype=float)\n    tli = wp.tile_zeros(shape=(8,), dtype=int)\n"
)


def warp_build(statements: Sequence[str], tmp_path: Path) -> list[tuple[str | None, dict[str, Any]]]:
    """Build one kernel per statement with Warp's code generator (no C++ compile, no wp.init()).

    Every kernel receives :data:`KERNEL_PARAMS` and has the locals ``tl`` (8x8 float32 tile) and
    ``tli`` (8 int32 tile). Returns, per kernel, None or Warp's error text, and the Warp types of
    its local variables.
    """
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    signature = ", ".join(f"{n}: {a}" for n, a in KERNEL_PARAMS)
    body = "".join(
        f"@wp.kernel\ndef k{i}({signature}):\n{KERNEL_PRELUDE}    {stmt}\n\n\n"
        for i, stmt in enumerate(statements)
    )
    name = f"wh_builtins_oracle_{next(_counter)}"
    file = tmp_path / f"{name}.py"
    file.write_text("import warp as wp\n\n\n" + body, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    results: list[tuple[str | None, dict[str, Any]]] = []
    try:
        spec.loader.exec_module(module)
        for i in range(len(statements)):
            kernel = getattr(module, f"k{i}")
            opts = kernel.module.resolve_options(wp.config, 1)
            opts["output_arch"] = None
            try:
                kernel.adj.build(None, opts)
            except Exception as exc:  # Warp raises RuntimeError, TypeError, ValueError, WarpCodegen*Error
                results.append((f"{type(exc).__name__}: {exc}", {}))
            else:
                results.append((None, {k: v.type for k, v in kernel.adj.symbols.items()}))
    finally:
        sys.modules.pop(name, None)
    return results


def warp_to_model(t: Any) -> WarpType | tuple[Any, ...]:
    """A Warp type as the model's type (tiles as a tuple, to compare storage and shape too)."""
    import builtins

    import warp._src.types as wt

    if t is int:
        return INT32
    if t is float:
        return FLOAT32
    if t is builtins.bool or t is wt.bool:
        return BOOL
    if isinstance(t, type) and t in wt.scalar_types:
        return Scalar(t.__name__)
    hint = getattr(t, "_wp_generic_type_hint_", None)
    params = getattr(t, "_wp_type_params_", ())
    if hint is wt.Vector:
        return Vector(params[0], Scalar(params[1].__name__))
    if hint is wt.Matrix:
        return Matrix(params[0], params[1], Scalar(params[2].__name__))
    if hint is wt.Quaternion:
        return Quaternion(Scalar(params[0].__name__))
    if hint is wt.Transformation:
        return Transform(Scalar(params[0].__name__))
    if wt.is_tuple(t):
        return TupleType(tuple(warp_to_model(x) for x in t.types))  # type: ignore[misc]
    if wt.is_tile(t):
        return ("tile", warp_to_model(t.dtype), tuple(t.shape), t.storage)
    return ("other", repr(t))


Build = Callable[[Sequence[str]], list[tuple[str | None, dict[str, Any]]]]


F16 = Scalar("float16")
# What the static model sees for each expression the oracle kernels can use
MODEL_TYPES: dict[str, WarpType] = {
    "f16": F16,
    "f32": FLOAT32,
    "f64": Scalar("float64"),
    "i32": INT32,
    "i64": Scalar("int64"),
    "u8": Scalar("uint8"),
    "b": BOOL,
    "v2": Vector(2, FLOAT32),
    "v3": Vector(3, FLOAT32),
    "v3d": Vector(3, Scalar("float64")),
    "v3i": Vector(3, INT32),
    "v4": Vector(4, FLOAT32),
    "m22": Matrix(2, 2, FLOAT32),
    "m33": Matrix(3, 3, FLOAT32),
    "m33d": Matrix(3, 3, Scalar("float64")),
    "q": Quaternion(FLOAT32),
    "qd": Quaternion(Scalar("float64")),
    "tf": Transform(FLOAT32),
    "a1": Array(FLOAT32, 1),
    "a2": Array(FLOAT32, 2),
    "ai": Array(INT32, 1),
    "av3": Array(Vector(3, FLOAT32), 1),
    "tl": Tile(FLOAT32, (8, 8)),
    "tli": Tile(INT32, (8,)),
    "1": INT32,
    "1.5": FLOAT32,
    "True": BOOL,
    "(8, 8)": TupleType((INT32, INT32)),
    "(8,)": TupleType((INT32,)),
    "wp.float32": TypeRef(FLOAT32),
}
