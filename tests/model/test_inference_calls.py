"""Types through calls: builtins whose type Warp computes in code, generic constructors, user functions;
each type the inference names is the type Warp's code generator gives the same variable."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from warp_harness.builtins import load_table
from warp_harness.model.func_calls import bind_arguments, called_func, warp_key
from warp_harness.model.module import build_model
from warp_harness.model.types import (
    BOOL,
    FLOAT32,
    INT32,
    UNKNOWN,
    Matrix,
    Quaternion,
    Scalar,
    Transform,
    Vector,
    WarpType,
)

F64 = Scalar("float64")
U32 = Scalar("uint32")
V3 = Vector(3, FLOAT32)

SOURCE = """
import warp as wp

N = 3
vec6f = wp.types.vector(length=6, dtype=float)


@wp.func
def kinetic(m: float, v: wp.vec3):
    return 0.5 * m * wp.dot(v, v)


@wp.func
def clamp_unit(x: float):
    if x > 1.0:
        return 1.0
    return wp.max(x, 0.0)


@wp.func
def annotated(x: float) -> wp.float64:
    return wp.float64(x)


@wp.func
def split(v: wp.vec3):
    return v[0], v[1]


@wp.kernel
def k(a: wp.array(dtype=float), v: wp.array(dtype=wp.vec3), flags: wp.array(dtype=int),
      vd: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    w_f = wp.where(a[i] > 0.0, 1.0, 0.0)
    w_i = wp.where(flags[i], 1, 0)
    w_v = wp.where(a[i] > 0.0, v[i], wp.vec3(0.0))
    ident = wp.identity(n=3, dtype=float)
    ident_d = wp.identity(N, wp.float64)
    m22 = wp.matrix(1.0, 2.0, 3.0, 4.0, shape=(2, 2))
    m_zero = wp.matrix(shape=(3, 4), dtype=wp.float64)
    vec_args = wp.vector(1.0, 2.0, 3.0)
    vec_len = wp.vector(length=N, dtype=wp.float64)
    vec_copy = wp.vector(vd[i])
    vec_fill = wp.vector(2.0, length=4)
    cols = wp.matrix_from_cols(v[i], v[i])
    rows = wp.matrix_from_rows(v[i], v[i])
    q = wp.quat_identity()
    qd = wp.quat_identity(dtype=wp.float64)
    t = wp.transform_identity()
    old = wp.atomic_add(flags, i, 1)
    oldf = wp.atomic_max(a, i, 1.0)
    six = vec6f()
    ke = kinetic(a[i], v[i])
    cu = clamp_unit(a[i])
    an = annotated(a[i])
    s0, s1 = split(v[i])
    n2 = wp.norm_l2(v[i])
    ln = wp.length(wp.cross(v[i], wp.normalize(v[i])))
    cast = wp.float64(a[i])
"""

EXPECTED: dict[str, WarpType] = {
    "w_f": FLOAT32,
    "w_i": INT32,
    "w_v": V3,
    "ident": Matrix(3, 3, FLOAT32),
    "ident_d": Matrix(3, 3, F64),
    "m22": Matrix(2, 2, FLOAT32),
    "m_zero": Matrix(3, 4, F64),
    "vec_args": V3,
    "vec_len": Vector(3, F64),
    "vec_copy": Vector(3, F64),
    "vec_fill": Vector(4, FLOAT32),
    "cols": Matrix(3, 2, FLOAT32),
    "rows": Matrix(2, 3, FLOAT32),
    "q": Quaternion(FLOAT32),
    "qd": Quaternion(F64),
    "t": Transform(FLOAT32),
    "old": INT32,
    "oldf": FLOAT32,
    "six": Vector(6, FLOAT32),
    "ke": FLOAT32,
    "cu": FLOAT32,
    "an": F64,
    "s0": FLOAT32,
    "s1": FLOAT32,
    "n2": FLOAT32,
    "ln": FLOAT32,
    "cast": F64,
}

_counter = itertools.count()


def _warp_type(t: Any) -> WarpType | str:
    import builtins

    import warp._src.types as wt

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
    return repr(t)


def _warp_locals(source: str, kernel: str, tmp_path: Path) -> dict[str, WarpType | str]:
    """The type Warp's code generator gives each local of ``kernel`` (no C++ compile)."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    name = f"wh_inference_calls_{next(_counter)}"
    file = tmp_path / f"{name}.py"
    file.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        built = getattr(module, kernel)
        opts = built.module.resolve_options(wp.config, 1)
        opts["output_arch"] = None
        built.adj.build(None, opts)
        return {k: _warp_type(v.type) for k, v in built.adj.symbols.items()}
    finally:
        sys.modules.pop(name, None)


def test_types_through_calls_are_what_warp_gives(tmp_path: Path) -> None:
    model = build_model(SOURCE, "m.py", builtins=load_table())
    kernel = model.kernel_named("k")
    assert kernel is not None
    ours = model.types(kernel).variables
    warp = _warp_locals(SOURCE, "k", tmp_path)
    for name, expected in EXPECTED.items():
        assert ours[name] == expected, (name, ours[name])
        assert warp[name] == expected, (name, warp[name])


UNSURE = """
import warp as wp
from typing import Any

FLAG = wp.constant(wp.uint32(7))


@wp.func
def pick(x: float) -> float:
    return x


@wp.func
def pick(x: int) -> int:
    return x


@wp.func
def generic(x: Any):
    return x


@wp.func
def flagged():
    return FLAG


@wp.func
def recursive(x: float):
    return recursive(x)


@wp.kernel
def k(a: wp.array(dtype=float), n: int):
    i = wp.tid()
    overloaded = pick(a[i])
    from_any = generic(a[i])
    typed_constant = flagged()
    loop = recursive(a[i])
    mixed = wp.where(a[i] > 0.0, 1, 0.0)
    runtime_length = wp.vector(length=n, dtype=float)
    mixed_args = wp.vector(1.0, 2)
"""


@pytest.mark.parametrize(
    "name", ["overloaded", "from_any", "typed_constant", "loop", "mixed", "runtime_length", "mixed_args"]
)
def test_what_is_not_certain_stays_unknown(name: str) -> None:
    model = build_model(UNSURE, "m.py", builtins=load_table())
    kernel = model.kernel_named("k")
    assert kernel is not None
    assert model.types(kernel).variables[name] is UNKNOWN
    assert model.overloaded_funcs == frozenset({"pick"})


CALLS = """
import warp as wp
import helpers


@wp.func
def top(x: float, n: int = 2, *, scale: float = 1.0):
    return x


def factory():
    @wp.func
    def inner(x: float):
        return x

    @wp.kernel
    def made(a: wp.array(dtype=float)):
        a[0] = inner(a[0]) + top(a[0])

    return made


@wp.kernel
def k(a: wp.array(dtype=float)):
    a[0] = top(a[0]) + inner(a[0]) + helpers.top(a[0])
    b = top(a[0], 1, 2)
    c = top(a[0], scale=2.0, n=3)
    d = top(n=1)
    e = top(a[0], 1, m=2)
    f = top(a[0], 1, x=1.0)
    g = top(*a)
"""


def _calls(model: Any, kernel_name: str) -> list[ast.Call]:
    kernel = next(k for k in model.kernels if k.name == kernel_name)
    return [n for n in ast.walk(kernel.node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]


def test_which_definition_a_call_certainly_runs() -> None:
    model = build_model(CALLS, "m.py")
    k = next(x for x in model.kernels if x.name == "k")
    made = next(x for x in model.kernels if x.name == "made")
    resolved = {ast.unparse(c): called_func(model, k, c) for c in _calls(model, "k")}
    assert resolved["top(a[0])"] is model.funcs["top"]
    assert resolved["inner(a[0])"] is None  # defined in another function: out of reach
    made_calls = {ast.unparse(c): called_func(model, made, c) for c in _calls(model, "made")}
    assert made_calls["inner(a[0])"] is model.funcs["inner"]
    assert made_calls["top(a[0])"] is model.funcs["top"]
    assert warp_key(model, model.funcs["inner"]) == "factory__locals__inner"
    assert warp_key(model, model.funcs["top"]) == "top"


def test_arguments_bind_as_python_binds_them() -> None:
    model = build_model(CALLS, "m.py")
    top = model.funcs["top"]
    bindings = {ast.unparse(c): bind_arguments(top, c) for c in _calls(model, "k") if c.func.id == "top"}
    ok = bindings["top(a[0], scale=2.0, n=3)"]
    assert ok is not None and ok.error is None and sorted(ok.arguments) == ["n", "scale", "x"]
    errors = {
        "top(a[0], 1, 2)": "takes 2 positional arguments but 3 were given",
        "top(n=1)": "missing 1 required argument: 'x'",
        "top(a[0], 1, m=2)": "unexpected keyword argument 'm'",
        "top(a[0], 1, x=1.0)": "multiple values for argument 'x'",
    }
    for call, message in errors.items():
        binding = bindings[call]
        assert binding is not None and binding.error is not None and message in binding.error
    assert bindings["top(*a)"] is None  # unpacking: not decidable
