"""check_call and return_type, verified against Warp's own code generator."""

from __future__ import annotations

import random

import pytest
from builtins_oracle import MODEL_TYPES, Build, warp_to_model

from warp_harness.builtins import BuiltinTable, CallStatus, describe_arity
from warp_harness.model.types import (
    FLOAT32,
    INT32,
    UNKNOWN,
    Array,
    Quaternion,
    Scalar,
    Tile,
    TupleType,
    TypeRef,
    Vector,
    WarpType,
)

F16 = Scalar("float16")
F64 = Scalar("float64")
V3 = Vector(3, FLOAT32)

OK, BAD_TYPES, BAD_ARITY, UNKNOWN_STATUS = (
    CallStatus.OK,
    CallStatus.BAD_TYPES,
    CallStatus.BAD_ARITY,
    CallStatus.UNKNOWN,
)

# (kernel statement, builtin, positional args, keyword args, expected status)
CASES: list[tuple[str, str, list[str], dict[str, str], CallStatus]] = [
    ("wp.sqrt(f32)", "sqrt", ["f32"], {}, OK),
    ("wp.sqrt(i32)", "sqrt", ["i32"], {}, BAD_TYPES),
    ("wp.sqrt(1)", "sqrt", ["1"], {}, BAD_TYPES),
    ("wp.sqrt(f32, f32)", "sqrt", ["f32", "f32"], {}, BAD_ARITY),
    ("wp.sqrt()", "sqrt", [], {}, BAD_ARITY),
    ("wp.tile_load(a2, shape=(8, 8))", "tile_load", ["a2"], {"shape": "(8, 8)"}, OK),
    ("wp.tile_load(a2, shap=(8, 8))", "tile_load", ["a2"], {"shap": "(8, 8)"}, BAD_ARITY),
    ("wp.tile_load(v3, shape=(8, 8))", "tile_load", ["v3"], {"shape": "(8, 8)"}, BAD_TYPES),
    ("wp.min(f32, f32)", "min", ["f32", "f32"], {}, OK),
    ("wp.min(f32, v3)", "min", ["f32", "v3"], {}, BAD_TYPES),
    ("wp.length(v3)", "length", ["v3"], {}, OK),
    ("wp.length(f32)", "length", ["f32"], {}, BAD_TYPES),
    ("wp.length(v3i)", "length", ["v3i"], {}, BAD_TYPES),
    ("wp.dot(v3, v3)", "dot", ["v3", "v3"], {}, OK),
    ("wp.dot(v3, m33)", "dot", ["v3", "m33"], {}, BAD_TYPES),
    ("wp.sin(f16)", "sin", ["f16"], {}, OK),
    ("wp.cross(v3, v3)", "cross", ["v3", "v3"], {}, OK),
    ("wp.cross(v2, v2)", "cross", ["v2", "v2"], {}, BAD_TYPES),
    ("wp.normalize(v3d)", "normalize", ["v3d"], {}, OK),
    ("wp.quat_rotate(q, v3)", "quat_rotate", ["q", "v3"], {}, OK),
    ("wp.quat_rotate(v3, q)", "quat_rotate", ["v3", "q"], {}, BAD_TYPES),
    ("wp.transform_point(tf, v3)", "transform_point", ["tf", "v3"], {}, OK),
    ("wp.atomic_add(a1, i32, f32)", "atomic_add", ["a1", "i32", "f32"], {}, OK),
    ("wp.atomic_add(a1, f32, f32)", "atomic_add", ["a1", "f32", "f32"], {}, BAD_TYPES),
    ("wp.clamp(f32, f32, f32)", "clamp", ["f32", "f32", "f32"], {}, OK),
    ("wp.clamp(f32, f32)", "clamp", ["f32", "f32"], {}, BAD_ARITY),
    ("wp.where(b, f32, f32)", "where", ["b", "f32", "f32"], {}, OK),
    ("wp.where(v3, f32, f32)", "where", ["v3", "f32", "f32"], {}, BAD_TYPES),
    ("wp.expect_near(f32, f32)", "expect_near", ["f32", "f32"], {}, OK),
    ("wp.abs(u8)", "abs", ["u8"], {}, OK),
    ("wp.tile_sum(tl)", "tile_sum", ["tl"], {}, OK),
    (
        "wp.tile_zeros(shape=(8,), dtype=wp.float32)",
        "tile_zeros",
        [],
        {"shape": "(8,)", "dtype": "wp.float32"},
        OK,
    ),
    ("wp.vector(f32, f32, f32)", "vector", ["f32", "f32", "f32"], {}, OK),
    ("wp.printf()", "printf", [], {}, BAD_ARITY),
    ("wp.quat_to_rpy(qd)", "quat_to_rpy", ["qd"], {}, BAD_TYPES),
    ("wp.norm_l2(v3)", "norm_l2", ["v3"], {}, OK),
]


def _check(table: BuiltinTable, name: str, args: list[str], kwargs: dict[str, str]) -> CallStatus:
    return table.check_call(
        name, [MODEL_TYPES[a] for a in args], {k: MODEL_TYPES[v] for k, v in kwargs.items()}
    ).status


def test_examples_agree_with_warp(table: BuiltinTable, build: Build) -> None:
    results = build([c[0] for c in CASES])
    for (stmt, name, args, kwargs, expected), (error, _) in zip(CASES, results, strict=True):
        assert _check(table, name, args, kwargs) is expected, stmt
        if expected is OK:
            assert error is None, f"{stmt}: Warp rejects it: {error}"
        else:
            assert error is not None, f"{stmt}: the table says {expected.value}, Warp compiles it"


def test_bad_results_explain_themselves(table: BuiltinTable) -> None:
    bad = table.check_call("sqrt", [INT32], {})
    assert bad.status is BAD_TYPES and bad.is_error and not bad.ok
    assert bad.signatures == ("sqrt(x: Float) -> Float",)
    assert "int32" in bad.message
    arity = table.check_call("sqrt", [FLOAT32, FLOAT32], {})
    assert arity.status is BAD_ARITY and arity.expected_arity == "1 argument"
    assert "got 2" in arity.message
    kw = table.check_call("tile_load", [Array(FLOAT32, 2)], {"shap": TupleType((INT32, INT32))})
    assert kw.status is BAD_ARITY and "unexpected keyword argument 'shap'" in kw.message
    assert table.check_call("clamp", [FLOAT32], {}).expected_arity == "3 arguments"
    assert table.check_call("printf", [], {}).expected_arity == "at least 1 argument"


def test_unknown_arguments_are_never_flagged(table: BuiltinTable) -> None:
    assert table.check_call("sqrt", [UNKNOWN], {}).status is UNKNOWN_STATUS
    assert table.check_call("dot", [V3, UNKNOWN], {}).status is UNKNOWN_STATUS
    assert table.check_call("length", [Vector(3, FLOAT32)], {}).status is OK
    assert table.check_call("atomic_add", [Array(UNKNOWN, 1), INT32, FLOAT32], {}).status is OK
    # arity is still decidable with unknown types
    assert table.check_call("sqrt", [UNKNOWN, UNKNOWN], {}).status is BAD_ARITY
    assert table.check_call("no_such_builtin", [FLOAT32], {}).status is UNKNOWN_STATUS
    # a type passed where a value is expected: never concluded bad from it
    assert not table.check_call("sqrt", [TypeRef(INT32)], {}).is_error
    # Warp does not type-check variadic overloads (tile_sum is one): their value_func does
    assert table.check_call("tile_sum", [Array(FLOAT32, 1)], {}).status is OK


def test_mixed_generic_arguments_are_left_to_another_rule(table: BuiltinTable, build: Build) -> None:
    # mul(a: Float, b: Float) style overloads: the table does not demand equal types
    assert table.check_call("min", [F16, FLOAT32], {}).status is OK
    assert table.check_call("mul", [F16, FLOAT32], {}).status is OK
    assert table.return_type("min", [F16, FLOAT32], {}) is UNKNOWN
    ((error, _),) = build(["wp.min(f16, f32)"])
    assert error is not None and "must be the same" in error  # Warp's value_func, not overload resolution


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("length", [V3], FLOAT32),
        ("dot", [V3, V3], FLOAT32),
        ("sin", [F16], F16),
        ("sqrt", [FLOAT32], FLOAT32),
        ("sqrt", [F64], F64),
        ("length", [Quaternion(F64)], F64),
        ("cross", [V3, V3], V3),
        ("normalize", [Vector(3, F64)], Vector(3, F64)),
        ("quat_rotate", [Quaternion(FLOAT32), V3], V3),
        ("min", [FLOAT32, FLOAT32], FLOAT32),
        ("abs", [INT32], INT32),
        ("tid", [], INT32),
        ("sqrt", [UNKNOWN], UNKNOWN),
        ("sqrt", [INT32], UNKNOWN),
    ],
)
def test_return_types(table: BuiltinTable, name: str, args: list[WarpType], expected: WarpType) -> None:
    assert table.return_type(name, args, {}) == expected


def test_generic_return_types_from_the_stubs(table: BuiltinTable) -> None:
    # the generic overloads' value_func is code: their return comes from warp/__init__.pyi
    sqrt = table.get("sqrt")
    assert sqrt is not None
    generic = [o for o in sqrt.overloads if not o.hidden]
    assert len(generic) == 1 and generic[0].return_type is None and generic[0].return_annotation == "Float"
    length = table.get("length")
    assert length is not None
    assert any(o.return_annotation == "Float" for o in length.overloads if o.return_type is None)
    # bfloat16 has no concrete Warp-harness overload path in the model, only the generic one
    assert table.return_type("sqrt", [Scalar("bfloat16")], {}) == Scalar("bfloat16")
    tile = table.return_type("tile_load", [Array(FLOAT32, 2)], {"shape": TupleType((INT32, INT32))})
    assert isinstance(tile, Tile) and tile.storage == "register"
    assert (
        table.return_type("tile_load", [Array(FLOAT32, 2)], {"shape": UNKNOWN, "storage": UNKNOWN}) is UNKNOWN
    )


def test_lookup(table: BuiltinTable) -> None:
    assert table.has_builtin("sqrt") and not table.has_builtin("sqroot") and table.get("sqroot") is None
    assert table.closest("sqroot")[0] == "sqrt"
    assert "length" in table.closest("lenght")
    assert table.warp_attribute_kind("sqrt") == "builtin_function"
    assert table.warp_attribute_kind("tile_load") == "builtin_function"  # kernel-only builtin
    assert table.warp_attribute_kind("launch") == "python_function"
    assert table.warp_attribute_kind("vec3") == "type"
    assert table.warp_attribute_kind("float16") == "type"
    assert table.warp_attribute_kind("PI") == "constant"
    assert table.warp_attribute_kind("config") == "module"
    assert table.warp_attribute_kind("Mesh") == "class"
    assert table.warp_attribute_kind("sqroot") is None
    assert table.kernel_call_target("vec3") == "vector"
    assert table.kernel_call_target("mat33") == "matrix"
    assert table.kernel_call_target("float32") == "float32"
    assert table.kernel_call_target("launch") is None
    assert table.kernel_call_target("sqrt") == "sqrt"


def test_describe_arity() -> None:
    assert describe_arity([(1, 1)]) == "1 argument"
    assert describe_arity([(1, 1), (2, 2)]) == "1 or 2 arguments"
    assert describe_arity([(2, 6)]) == "2 to 6 arguments"
    assert describe_arity([(0, 0), (2, None)]) == "0 or at least 2 arguments"
    assert describe_arity([(1, None)]) == "at least 1 argument"
    assert describe_arity([(1, 1), (3, 4)]) == "1, 3 or 4 arguments"


ATOMS = [a for a in MODEL_TYPES if a not in ("wp.float32",)]
SWEEP = [
    "sqrt", "sin", "exp", "log", "abs", "sign", "floor", "min", "max", "clamp", "pow", "atan2", "mul", "add",
    "div", "mod", "dot", "cross", "length", "length_sq", "normalize", "outer", "transpose", "inverse",
    "determinant", "quat_rotate", "quat_inverse", "transform_point", "transform_vector", "lerp", "step",
    "select", "where", "atomic_add", "atomic_min", "tile_load", "tile_store", "tile_sum", "tile_transpose",
    "tile_matmul", "bit_and", "lshift", "float32", "int32", "isfinite", "cw_mul", "diag", "trace", "vector",
]  # fmt: skip


def test_sweep_never_flags_what_warp_compiles(table: BuiltinTable, build: Build) -> None:
    """Random well- and ill-typed calls: every call the table flags, Warp rejects too."""
    rnd = random.Random(1234)
    calls: list[tuple[str, list[str]]] = []
    for name in SWEEP:
        builtin = table.get(name)
        assert builtin is not None
        counts = sorted({lo for o in builtin.overloads for lo, _ in [o.arity()]} | {1, 2})
        for n in counts:
            for _ in range(6):
                calls.append((name, [rnd.choice(ATOMS) for _ in range(n)]))
    results = build([f"wp.{name}({', '.join(args)})" for name, args in calls])
    flagged = 0
    for (name, args), (error, _) in zip(calls, results, strict=True):
        check = table.check_call(name, [MODEL_TYPES[a] for a in args], {})
        if check.is_error:
            flagged += 1
            assert error is not None, (
                f"wp.{name}({', '.join(args)}): {check.status.value} but Warp compiles it"
            )
        if error is not None and "Couldn't find function overload" in error:
            assert check.status is not OK, f"wp.{name}({', '.join(args)}): OK but Warp finds no overload"
    assert flagged > len(calls) // 3  # the sweep does exercise the bad paths


def test_sweep_return_types_match_warp(table: BuiltinTable, build: Build) -> None:
    """Where the table names a return type, it is the type Warp gives the result."""
    rnd = random.Random(99)
    calls: list[tuple[str, list[str]]] = []
    for name in SWEEP:
        if name in ("tile_store", "atomic_add", "atomic_min"):
            continue
        for n in (1, 2, 3):
            for _ in range(14):
                args = [rnd.choice(ATOMS) for _ in range(n)]
                if table.check_call(name, [MODEL_TYPES[a] for a in args], {}).ok:
                    calls.append((name, args))
    results = build([f"r = wp.{name}({', '.join(args)})" for name, args in calls])
    named = 0
    for (name, args), (error, symbols) in zip(calls, results, strict=True):
        ours = table.return_type(name, [MODEL_TYPES[a] for a in args], {})
        if error is not None or ours is UNKNOWN or "r" not in symbols:
            continue
        named += 1
        actual = warp_to_model(symbols["r"])
        if isinstance(ours, Tile):
            assert isinstance(actual, tuple) and actual[0] == "tile", (name, args, actual)
            assert ours.storage == actual[3] and (ours.dtype is UNKNOWN or ours.dtype == actual[1])
        else:
            assert ours == actual, f"wp.{name}({', '.join(args)}): table {ours}, Warp {actual}"
    assert named > 50


def test_callable_in_kernels(table: BuiltinTable, build: Build) -> None:
    assert table.callable_in_kernels("sqrt") and table.callable_in_kernels("vec3")
    assert table.callable_in_kernels("quat_between_vectors")  # an exported @wp.func
    assert not table.callable_in_kernels("launch") and not table.callable_in_kernels("sqroot")
    (error_launch, _), (error_sqroot, _), (error_func, _) = build(
        ["wp.launch(f32)", "wp.sqroot(f32)", "wp.quat_between_vectors(v3, v3)"]
    )
    assert error_launch is not None and error_sqroot is not None and error_func is None
