"""What Warp computes in code (its value_funcs) for builtins whose registry data says only ``Any``: the
return types the table derives for them, Warp's own argument checks, and removed overloads; each
verified against Warp's code generator."""

from __future__ import annotations

from builtins_oracle import MODEL_TYPES, Build, warp_to_model

from warp_harness.builtins import BuiltinTable, CallStatus
from warp_harness.model.types import FLOAT32, UNKNOWN, Matrix

# (kernel statement assigning `r`, builtin, positional args): the table names r's type, Warp agrees
RETURNS = [
    ("r = wp.where(b, f32, f32)", "where", ["b", "f32", "f32"]),
    ("r = wp.where(i32, v3, v3)", "where", ["i32", "v3", "v3"]),
    ("r = wp.where(b, m33d, m33d)", "where", ["b", "m33d", "m33d"]),
    ("r = wp.where(a1, q, q)", "where", ["a1", "q", "q"]),
    ("r = wp.atomic_add(ai, i32, i32)", "atomic_add", ["ai", "i32", "i32"]),
    ("r = wp.atomic_max(a1, i32, f32)", "atomic_max", ["a1", "i32", "f32"]),
    ("r = wp.atomic_min(a2, i32, i32, f32)", "atomic_min", ["a2", "i32", "i32", "f32"]),
    ("r = wp.atomic_cas(ai, i32, i32, i32)", "atomic_cas", ["ai", "i32", "i32", "i32"]),
    ("r = wp.matrix_from_cols(v3, v3)", "matrix_from_cols", ["v3", "v3"]),
    ("r = wp.matrix_from_rows(v3d, v3d, v3d, v3d)", "matrix_from_rows", ["v3d", "v3d", "v3d", "v3d"]),
    ("r = wp.norm_l2(v3)", "norm_l2", ["v3"]),
    ("r = wp.norm_l1(v4)", "norm_l1", ["v4"]),
    ("r = wp.smooth_normalize(v3)", "smooth_normalize", ["v3"]),
    ("r = wp.quat_identity()", "quat_identity", []),
    ("r = wp.transform_identity()", "transform_identity", []),
]


def test_return_types_computed_in_code_match_warp(table: BuiltinTable, build: Build) -> None:
    results = build([stmt for stmt, _, _ in RETURNS])
    for (stmt, name, args), (error, symbols) in zip(RETURNS, results, strict=True):
        assert error is None, f"{stmt}: {error}"
        ours = table.return_type(name, [MODEL_TYPES[a] for a in args], {})
        assert ours is not UNKNOWN, stmt
        assert ours == warp_to_model(symbols["r"]), f"{stmt}: table {ours}, Warp {symbols['r']}"


def test_transpose_of_any_shape(table: BuiltinTable, build: Build) -> None:
    m32 = Matrix(3, 2, FLOAT32)
    assert table.return_type("transpose", [m32], {}) == Matrix(2, 3, FLOAT32)
    big = Matrix(5, 5, FLOAT32)
    assert table.return_type("transpose", [big], {}) == big
    ((error, symbols),) = build(["r = wp.transpose(wp.matrix_from_cols(v3, v3))"])
    assert error is None and warp_to_model(symbols["r"]) == Matrix(2, 3, FLOAT32)


def test_unsure_cases_stay_unknown(table: BuiltinTable) -> None:
    f32, i32, v3 = MODEL_TYPES["f32"], MODEL_TYPES["i32"], MODEL_TYPES["v3"]
    assert table.return_type("where", [MODEL_TYPES["b"], UNKNOWN, f32], {}) is UNKNOWN
    assert table.return_type("where", [MODEL_TYPES["b"], i32, f32], {}) is UNKNOWN  # Warp refuses it
    # a partial index: Warp's `+=` makes a view there; an explicit call is refused
    assert table.return_type("atomic_add", [MODEL_TYPES["a2"], i32, f32], {}) is UNKNOWN
    assert table.return_type("matrix_from_cols", [v3, MODEL_TYPES["v2"]], {}) is UNKNOWN
    assert table.return_type("norm_l2", [MODEL_TYPES["v3d"]], {}) is UNKNOWN  # Warp's own func, float32 only


# (statement, builtin, args, status, a fragment of both Warp's error and the table's message)
REFUSED = [
    ("wp.where(b, i32, f32)", "where", ["b", "i32", "f32"], CallStatus.BAD_VALUES, "where() true value type"),
    (
        "wp.where(b, v3, v3d)",
        "where",
        ["b", "v3", "v3d"],
        CallStatus.BAD_VALUES,
        "must be of the same type as",
    ),
    ("wp.atomic_add(ai, i32, f32)", "atomic_add", ["ai", "i32", "f32"], CallStatus.BAD_VALUES, "(float32)"),
    ("wp.atomic_sub(a1, i32, f64)", "atomic_sub", ["a1", "i32", "f64"], CallStatus.BAD_VALUES, "(float64)"),
    (
        "wp.select(b, f32, f32)",
        "select",
        ["b", "f32", "f32"],
        CallStatus.REMOVED,
        "wp.select() has been removed",
    ),
    ("wp.matrix(v3, q, v3)", "matrix", ["v3", "q", "v3"], CallStatus.REMOVED, "has been removed"),
]


def test_warps_value_checks_and_removed_overloads(table: BuiltinTable, build: Build) -> None:
    results = build([stmt for stmt, *_ in REFUSED])
    for (stmt, name, args, status, fragment), (error, _) in zip(REFUSED, results, strict=True):
        check = table.check_call(name, [MODEL_TYPES[a] for a in args], {})
        assert check.status is status and check.is_error, (stmt, check)
        assert error is not None, f"{stmt}: the table refuses it, Warp compiles it"
        if status is CallStatus.BAD_VALUES:
            # the table quotes Warp's own message
            assert check.message.split(" (")[0] in error, (check.message, error)
        assert fragment in check.message or fragment in error, (stmt, check.message, error)


def test_removed_overloads_come_from_warps_documentation(table: BuiltinTable) -> None:
    select = table.get("select")
    matrix = table.get("matrix")
    assert select is not None and matrix is not None
    assert {o.removed for o in select.overloads} == {"1.10"}
    assert {o.removed for o in matrix.overloads} == {"1.10", None}  # only the (pos, rot, scale) one
    # the variadic constructor is alive
    check = table.check_call("matrix", [MODEL_TYPES["f32"]] * 4, {"shape": MODEL_TYPES["(8, 8)"]})
    assert check.status is not CallStatus.REMOVED
    where = table.get("where")
    assert where is not None and all(o.removed is None for o in where.overloads)
