from __future__ import annotations

import re

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_edits
from warp_harness.record import Record

HEADER = """import warp as wp

C64 = wp.constant(wp.float64(2.0))
CH = wp.constant(wp.float16(0.5))
SCALE = 2.5
K = wp.constant(3)


@wp.kernel
def k(a: wp.array(dtype=int), f: wp.array(dtype=float), h: wp.array(dtype=wp.float16),
      v3: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.float64), n64: wp.int64):
"""


def kernel(body: str, header: str = HEADER) -> str:
    return header + "".join(f"    {line}\n" for line in body.strip().splitlines())


# (case, kernel body, fragment of Warp's own error, fragment of the rule's message, fix text or None)
BAD = [
    (
        "float16*float32 literal",
        "x = h[0] * 2.0",
        "Input types must be the same, got ['float16', 'float32']",
        "mixes float16 and float32",
        "wp.float16(2.0)",
    ),
    (
        "float32*int literal",
        "x = f[0] * 2",
        "Input types must be the same, got ['float32', 'int32']",
        "mixes float32 and int32",
        "2.0",
    ),
    ("int literal first", "x = 2 * f[0]", "got ['int32', 'float32']", "mixes int32 and float32", "2.0"),
    (
        "int*float literal",
        "i = wp.tid()\nx = i * 2.0",
        "got ['int32', 'float32']",
        "mixes int32 and float32",
        "float(i)",
    ),
    ("negative literal", "x = f[0] * -2", "got ['float32', 'int32']", "mixes float32 and int32", "-2.0"),
    (
        "two variables",
        "x = f[0]\ny = d[0]\nz = x + y",
        "got ['float32', 'float64']",
        "mixes float32 and float64",
        "wp.float64(x)",
    ),
    (
        "int64 and int32",
        "i = wp.tid()\nj = n64 + i",
        "got ['int64', 'int32']",
        "mixes int64 and int32",
        "wp.int64(i)",
    ),
    (
        "unsigned shift",
        "u = wp.uint32(3)\ny = u << 1",
        "got ['uint32', 'int32']",
        "mixes uint32 and int32",
        "wp.uint32(1)",
    ),
    (
        "pow with int exponent",
        "x = f[0] ** 2",
        "Couldn't find function overload for 'pow'",
        "mixes float32 and int32",
        "2.0",
    ),
    (
        "typed float64 constant",
        "x = f[0] * C64",
        "got ['float32', 'float64']",
        "mixes float32 and float64",
        "wp.float64(f[0])",
    ),
    (
        "typed float16 constant",
        "x = f[0] * CH",
        "got ['float32', 'float16']",
        "mixes float32 and float16",
        "float(CH)",
    ),
    ("plain module int", "x = f[0] * K", "got ['float32', 'int32']", "mixes float32 and int32", "float(K)"),
    (
        "tid times float",
        "i = wp.tid()\nf[i] = f[i] * i",
        "got ['float32', 'int32']",
        "mixes float32 and int32",
        "float(i)",
    ),
    (
        "shape times float",
        "x = f.shape[0] * 2.0",
        "got ['int32', 'float32']",
        "mixes int32 and float32",
        "float(f.shape[0])",
    ),
    (
        "vector times int",
        "x = v3[0] * 2",
        "Object and coefficient must have the same scalar type",
        "scales a vec3f by an int32",
        "2.0",
    ),
    (
        "int times vector",
        "x = 2 * v3[0]",
        "Object and coefficient must have the same scalar type",
        "scales a vec3f by an int32",
        "2.0",
    ),
    (
        "int over vector",
        "x = 2 / v3[0]",
        "Object and coefficient must have the same scalar type",
        "scales a vec3f by an int32",
        "2.0",
    ),
    (
        "vector over half",
        "x = v3[0] / h[0]",
        "Object and coefficient must have the same scalar type",
        "scales a vec3f by a float16",
        "float(h[0])",
    ),
    (
        "matrix times int",
        "m = wp.mat22(1.0, 0.0, 0.0, 1.0)\nx = m * 2",
        "Object and coefficient must have the same scalar type",
        "scales a mat22f by an int32",
        "2.0",
    ),
    (
        "vec3f + vec3h",
        "w = wp.vec3h(v3[0])\nx = v3[0] + w",
        "got ['vec3f', 'vec3h']",
        "mixes vec3f and vec3h",
        "wp.vec3(w)",
    ),
    (
        "store float into int array",
        "a[0] = 2.0",
        "array_store() value argument type (float32) must be of the same type as the array (int32)",
        "stores a float32 into an element of an int32 array",
        "2",
    ),
    (
        "store int into float array",
        "f[0] = 1",
        "array_store() value argument type (int32) must be of the same type as the array (float32)",
        "stores an int32 into an element of a float32 array",
        "1.0",
    ),
    (
        "store float32 into half array",
        "h[0] = f[0]",
        "array_store() value argument type (float32) must be of the same type as the array (float16)",
        "stores a float32",
        "wp.float16(f[0])",
    ),
    (
        "store vec3h into vec3 array",
        "v3[0] = wp.vec3h(wp.float16(1.0))",
        "array_store() value argument type (vec3h) must be of the same type as the array (vec3f)",
        "stores a vec3h",
        "wp.vec3(wp.vec3h(wp.float16(1.0)))",
    ),
    (
        "store scalar into vec3 array",
        "v3[0] = 2.0",
        "array_store() value argument type (float32) must be of the same type as the array (vec3f)",
        "stores a float32",
        None,
    ),
    (
        "+= into int array",
        "a[0] += 2.0",
        "atomic_add() value argument type (float32) must be of the same type as the array (int32)",
        "adds a float32 to an element of an int32 array",
        "2",
    ),
    (
        "-= into half array",
        "h[0] -= 1.0",
        "atomic_sub() value argument type (float32) must be of the same type as the array (float16)",
        "subtracts a float32 from",
        "wp.float16(1.0)",
    ),
    ("*= into int array", "a[0] *= 2.5", "got ['int32', 'float32']", "mixes int32 and float32", None),
    ("+= on a local", "x = float(1.0)\nx += 1", "got ['float32', 'int32']", "mixes float32 and int32", "1.0"),
    ("min with int literal", "x = min(f[0], 1)", "got ['float32', 'int32']", "to min", "1.0"),
    ("wp.max mixed floats", "x = wp.max(f[0], h[0])", "got ['float32', 'float16']", "to max", "float(h[0])"),
    (
        "clamp with int bounds",
        "x = wp.clamp(f[0], 0, 1)",
        "got ['float32', 'int32', 'int32']",
        "to clamp",
        "0.0",
    ),
    (
        "atan2 with int",
        "x = wp.atan2(f[0], 1)",
        "Couldn't find function overload for 'atan2'",
        "to atan2",
        "1.0",
    ),
    (
        "conditional literal",
        "x = f[0] * (1 if f[0] > 0.0 else 2)",
        "got ['float32', 'int32']",
        "mixes float32 and int32",
        "float(1 if f[0] > 0.0 else 2)",
    ),
]


def _only(records: list[Record]) -> Record:
    wh003 = [r for r in records if r.rule == "WH003"]
    assert len(wh003) == 1, [r.message for r in wh003]
    return wh003[0]


def _fixed(source: str, record: Record) -> str:
    assert record.fix is not None
    text, applied = apply_edits(source, record.fix.edits)
    assert applied == len(record.fix.edits)
    return text


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says", "fix_text"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_mixed_types_are_flagged_and_warp_agrees(
    analyse: Analyse, body: str, warp_says: str, rule_says: str, fix_text: str | None
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH003"]))
    assert rule_says in record.message
    assert record.location.kernel == "k" and record.severity.value == "error"
    error = warp_error(source)
    assert error is not None and warp_says in error, error
    # the line Warp names is the line the rule points at
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line
    if fix_text is None:
        assert record.fix is None
        return
    assert record.fix is not None and record.fix.edits[0].new_text == fix_text
    fixed = _fixed(source, record)
    assert analyse(fixed, select=["WH003"]) == []
    assert warp_error(fixed) is None, fixed


GOOD_BODIES = [
    "x = f[0] * 2.0 + SCALE",
    "x = h[0] * CH + wp.float16(1.0)",
    "x = d[0] * C64",
    "i = wp.tid()\ny = i / 2 + i // 2 + i % 2",
    "x = f[0] ** 2.0",
    "y = f[0] < 1",
    "x = v3[0] * 2.0 + 2.0 * v3[0] + v3[0] / 2.0",
    "x = v3[0][0] * 3.0 + v3[0].x",
    "a[0] = 2\na[0] += 1\nf[0] = 2.0\nf[0] += f[0]",
    "h[0] = wp.float16(1.0)\nh[0] += wp.float16(1.0)",
    "x = min(f[0], 1.0) + wp.max(f[0], 2.0) + wp.clamp(f[0], 0.0, 1.0)",
    "i = wp.tid()\nj = max(i, 0) + wp.min(i, 3)",
    "x = float(len(f)) * 2.0\ny = len(f) * 2",
    "x = float(1.0)\nif f[0] > 0.0:\n    x = f[0] * 2.0\nf[0] = x * 3.0",
    "s = float(0.0)\nfor j in range(K):\n    s += f[j] * float(j)",
    "x = wp.length(v3[0]) * 2.0 + wp.dot(v3[0], v3[0])",
    "x = wp.float16(f[0]) * h[0]",
    "j = n64 + wp.int64(1)",
    "u = wp.uint32(1) << wp.uint32(3)",
    "x = -f[0] * 2.0",
]


@pytest.mark.parametrize("body", GOOD_BODIES)
def test_matching_types_pass_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = kernel(body)
    assert analyse(source, select=["WH003"]) == []
    assert warp_error(source) is None


def test_unknown_types_never_fire(analyse: Analyse) -> None:
    # np.float32 constants and values of user functions the model cannot type are not guessed at
    source = """
import warp as wp
import numpy as np
import mylib

S = np.float32(2.0)


@wp.kernel
def k(f: wp.array(dtype=float), g: wp.array(dtype=mylib.T)):
    x = f[0] * S
    y = g[0] * 2
    z = mylib.thing * 2.0
"""
    assert analyse(source, select=["WH003"]) == []


def test_fix_respects_the_import_alias(analyse: Analyse) -> None:
    source = kernel(
        "x = h[0] * 2.0", header=HEADER.replace("import warp as wp", "import warp").replace("wp.", "warp.")
    )
    record = _only(analyse(source, select=["WH003"]))
    assert record.fix is not None and record.fix.edits[0].new_text == "warp.float16(2.0)"
    assert record.fix.safe  # an exact literal of the right type changes no working code
    fixed = _fixed(source, record)
    assert analyse(fixed, select=["WH003"]) == [] and warp_error(fixed) is None


def test_a_cast_of_a_variable_is_not_a_safe_fix(analyse: Analyse) -> None:
    record = _only(analyse(kernel("x = f[0]\ny = d[0]\nz = x + y"), select=["WH003"]))
    assert record.fix is not None and not record.fix.safe


def test_funcs_are_checked_too(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.func
def half_twice(x: wp.float16) -> wp.float16:
    return x * 2.0
"""
    record = _only(analyse(source, select=["WH003"]))
    assert record.location.kernel == "half_twice" and "float16 and float32" in record.message


def test_a_redefined_struct_is_not_guessed_at(analyse: Analyse) -> None:
    # the alias keeps the first definition (v: float); the model only knows the second (v: vec2)
    source = """
import warp as wp


@wp.struct
class S:
    v: float


S1 = S


@wp.struct
class S:
    v: wp.vec2


@wp.kernel
def k(s1: S1, a: wp.array(dtype=float)):
    a[0] = s1.v
"""
    assert analyse(source, select=["WH003"]) == []
    assert warp_error(source) is None


_OPERANDS = [
    "2",
    "-3",
    "2.0",
    "0.5",
    "a[0]",
    "f[0]",
    "h[0]",
    "d[0]",
    "n64",
    "v3[0]",
    "wp.float16(1.0)",
    "wp.uint32(2)",
    "wp.int8(1)",
    "C64",
    "CH",
    "SCALE",
    "K",
    # values of builtin calls, typed from Warp's registry
    "wp.where(f[0] > 0.0, 1.0, 0.0)",
    "wp.where(a[0] > 0, 1, 0)",
    "wp.length(v3[0])",
    "wp.normalize(v3[0])",
    "wp.vec3(1.0, 2.0, 3.0)",
    "wp.max(h[0], CH)",
    "wp.float64(f[0])",
    "wp.atomic_add(a, 0, 1)",
]
_OPERATORS = ["+", "-", "*", "/", "//", "%", "**"]


def test_rule_and_compiler_agree_on_random_expressions(analyse: Analyse) -> None:
    """No false positive (the rule fires only where Warp fails) and no miss in the rule's own domain
    (where Warp says the input types must match, or an array store or atomic does, the rule fires)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    forms = st.sampled_from(["binop", "augmented", "store", "atomic"])

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(
        st.sampled_from(_OPERANDS),
        st.sampled_from(_OPERATORS),
        st.sampled_from(_OPERANDS),
        forms,
        st.sampled_from(["a", "f", "h", "d", "v3"]),
    )
    def check(left: str, op: str, right: str, form: str, array: str) -> None:
        body = {
            "binop": f"y = {left} {op} {right}",
            "augmented": f"x = {left}\nx {op}= {right}",
            "store": f"{array}[0] = {right}",
            "atomic": f"{array}[0] {'+' if op != '-' else '-'}= {right}",
        }[form]
        source = kernel(body)
        fired = [r for r in analyse(source, select=["WH003"]) if r.rule == "WH003"]
        error = warp_error(source)
        if fired:
            assert error is not None, (body, fired[0].message)
        domain = (
            "Input types must be the same",
            "Object and coefficient",
            "must be of the same type as the array",
        )
        if error is not None and any(d in error for d in domain):
            assert fired, (body, error)

    check()


# values typed through builtin calls: (case, body, Warp's error, the rule's message, fix text or None)
THROUGH_CALLS = [
    (
        "where of floats into an int array",
        "a[0] = wp.where(f[0] > 0.0, 1.0, 0.0)",
        "array_store() value argument type (float32) must be of the same type as the array (int32)",
        "stores a float32 into an element of an int32 array",
        "1",
    ),
    (
        "where of ints times a float",
        "y = f[0] * wp.where(a[0] > 0, 1, 0)",
        "Input types must be the same, got ['float32', 'int32']",
        "mixes float32 and int32",
        None,
    ),
    (
        "length into an int array",
        "a[0] = wp.length(v3[0])",
        "array_store() value argument type (float32) must be of the same type as the array (int32)",
        "stores a float32",
        "int(wp.length(v3[0]))",
    ),
    (
        "dot into a float64 array",
        "d[0] = wp.dot(v3[0], v3[0])",
        "array_store() value argument type (float32) must be of the same type as the array (float64)",
        "stores a float32 into an element of a float64 array",
        "wp.float64(wp.dot(v3[0], v3[0]))",
    ),
    (
        "vector constructor with a dtype into a vec3 array",
        "v3[0] = wp.vector(1.0, 2.0, 3.0, dtype=wp.float64)",
        "array_store() value argument type (vec3d) must be of the same type as the array (vec3f)",
        "stores a vec3d",
        "wp.vec3(wp.vector(1.0, 2.0, 3.0, dtype=wp.float64))",
    ),
    (
        "identity scaled by a half",
        "m = wp.identity(n=3, dtype=float)\nq = m * h[0]",
        "Object and coefficient must have the same scalar type",
        "scales a mat33f by a float16",
        None,
    ),
    (
        "old value of an atomic",
        "old = wp.atomic_add(a, 0, 1)\nf[0] = old",
        "array_store() value argument type (int32) must be of the same type as the array (float32)",
        "stores an int32 into an element of a float32 array",
        "float(old)",
    ),
    (
        "cast to float stored into an int array",
        "a[0] = wp.float32(a[0])",
        "array_store() value argument type (float32) must be of the same type as the array (int32)",
        "stores a float32",
        "int(wp.float32(a[0]))",
    ),
    (
        "matrix from columns into a float64 matrix",
        "m = wp.matrix_from_cols(v3[0], v3[0], v3[0])\nmd = wp.mat33d(wp.float64(0.0))\nq = m + md",
        "Input types must be the same, got ['mat33f', 'mat33d']",
        "mixes mat33f and mat33d",
        None,
    ),
]


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says", "fix_text"),
    [c[1:] for c in THROUGH_CALLS],
    ids=[c[0] for c in THROUGH_CALLS],
)
def test_types_through_builtin_calls_are_checked_and_warp_agrees(
    analyse: Analyse, body: str, warp_says: str, rule_says: str, fix_text: str | None
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH003"]))
    assert rule_says in record.message, record.message
    error = warp_error(source)
    assert error is not None and warp_says in error, error
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line
    if fix_text is None:
        assert record.fix is None or not record.fix.safe
        return
    assert record.fix is not None and record.fix.edits[0].new_text == fix_text
    fixed = _fixed(source, record)
    assert analyse(fixed, select=["WH003"]) == []
    assert warp_error(fixed) is None, fixed


def test_a_where_of_literals_is_fixed_in_its_literals(analyse: Analyse) -> None:
    source = kernel("a[0] = wp.where(f[0] > 0.0, 1.0, 0.0)")
    record = _only(analyse(source, select=["WH003"]))
    assert record.fix is not None and record.fix.safe
    assert [e.new_text for e in record.fix.edits] == ["1", "0"]
    fixed = _fixed(source, record)
    assert "wp.where(f[0] > 0.0, 1, 0)" in fixed
    assert analyse(fixed, select=["WH003"]) == [] and warp_error(fixed) is None


THROUGH_CALLS_GOOD = [
    "a[0] = wp.where(f[0] > 0.0, 1, 0)",
    "f[0] = wp.where(a[0] > 0, 1.0, 0.0) * f[0]",
    "f[0] = wp.length(v3[0]) + wp.dot(v3[0], v3[0])",
    "v3[0] = wp.normalize(wp.cross(v3[0], wp.vec3(0.0, 1.0, 0.0)))",
    "d[0] = wp.float64(wp.length(v3[0]))",
    "m = wp.identity(n=3, dtype=float)\nv3[0] = m * v3[0]",
    "v3[0] = wp.vector(1.0, 2.0, 3.0) + wp.vector(length=3, dtype=float)",
    "old = wp.atomic_add(a, 0, 1)\na[1] = old + 1",
    "h[0] = wp.max(h[0], CH) * wp.float16(2.0)",
    "v3[0] = wp.where(f[0] > 0.0, v3[0], wp.vec3(0.0))",
]


@pytest.mark.parametrize("body", THROUGH_CALLS_GOOD)
def test_matching_types_through_calls_pass_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = kernel(body)
    assert analyse(source, select=["WH003"]) == []
    assert warp_error(source) is None


def test_a_helper_returning_a_typed_constant_is_not_guessed_at(analyse: Analyse) -> None:
    """A module constant's Warp type can differ from its Python value's: not followed through a call."""
    source = """
import warp as wp

INACTIVE = wp.constant(wp.uint32(0xFFFFFFFF))


@wp.func
def inactive():
    return INACTIVE


@wp.kernel
def k(out: wp.array(dtype=wp.uint32)):
    out[0] = inactive()
    out[1] = wp.where(out[0] > wp.uint32(0), out[0], INACTIVE)
"""
    assert analyse(source, select=["WH003"]) == []
    assert warp_error(source) is None


def test_the_return_type_of_a_helper_comes_from_its_body(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.func
def kinetic_energy(m: float, v: wp.vec3):
    return 0.5 * m * wp.dot(v, v)


@wp.kernel
def k(mass: wp.array(dtype=float), vel: wp.array(dtype=wp.vec3), energy: wp.array(dtype=wp.float64)):
    i = wp.tid()
    energy[i] = kinetic_energy(mass[i], vel[i])
"""
    record = _only(analyse(source, select=["WH003"]))
    assert "stores a float32 into an element of a float64 array" in record.message
    error = warp_error(source)
    assert error is not None and "(float32) must be of the same type as the array (float64)" in error
