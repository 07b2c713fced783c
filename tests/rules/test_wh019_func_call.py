from __future__ import annotations

import re

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_edits
from warp_harness.record import Record

HEADER = """import warp as wp
from typing import Any


@wp.struct
class Body:
    mass: float
    com: wp.vec3


@wp.func
def spring(stretch: float, k: float, index: int):
    return -k * stretch * float(index)


@wp.func
def scale(v: wp.vec3, s: float = 1.0):
    return v * s


@wp.func
def weight(b: Body, g: float):
    return b.mass * g


@wp.func
def first(values: wp.array(dtype=float), count: wp.int64):
    return values[0]


@wp.func
def half(x: wp.float16):
    return x


@wp.func
def pick(flag: int, x: float):
    return x


@wp.kernel
def k(x: wp.array(dtype=float), n: wp.array(dtype=int), v: wp.array(dtype=wp.vec3),
      vd: wp.array(dtype=wp.vec3d), bodies: wp.array(dtype=Body)):
    i = wp.tid()
"""


def kernel(body: str) -> str:
    return HEADER + "".join(f"    {line}\n" for line in body.strip().splitlines())


def _only(records: list[Record]) -> Record:
    assert len(records) == 1, [r.message for r in records]
    return records[0]


# (case, kernel body, the types Warp lists, a fragment of the rule's message, the fixed argument or None)
BAD = [
    (
        "float for int",
        "x[i] = spring(x[i], 2.0, x[i])",
        "[float32, float32, float32]",
        "`index` takes an int32",
        None,
    ),
    (
        "int literal for float",
        "x[i] = spring(x[i], 2, i)",
        "[float32, int32, int32]",
        "`2` is an int32",
        "2.0",
    ),
    ("float literal for int", "x[i] = spring(x[i], 2.0, 3.0)", "[float32, float32, float32]", "`3.0`", "3"),
    (
        "int variable for float",
        "x[i] = spring(x[i], n[i], i)",
        "[float32, int32, int32]",
        "`n[i]` is an int32",
        None,
    ),
    ("vector for float", "x[i] = spring(v[i], 2.0, i)", "[vec3f, float32, int32]", "`v[i]` is a vec3f", None),
    ("float for vector", "v[i] = scale(x[i])", "[float32]", "`v` takes a vec3f", None),
    ("vec3d for vec3", "v[i] = scale(vd[i], 2.0)", "[vec3d, float32]", "`vd[i]` is a vec3d", None),
    ("keyword of another type", "v[i] = scale(v[i], s=i)", "[vec3f, int32]", "`s` takes a float32", None),
    (
        "missing argument",
        "x[i] = spring(x[i], 2.0)",
        "[float32, float32]",
        "missing 1 required argument",
        None,
    ),
    (
        "too many arguments",
        "v[i] = scale(v[i], 1.0, 2.0)",
        "[vec3f, float32, float32]",
        "takes 2 positional",
        None,
    ),
    (
        "unknown keyword",
        "v[i] = scale(v[i], factor=2.0)",
        "[vec3f, float32]",
        "unexpected keyword argument",
        None,
    ),
    ("float for a struct", "x[i] = weight(x[i], 9.8)", "[float32, float32]", "`b` takes a Body", None),
    (
        "array of another dtype",
        "x[i] = first(n, wp.int64(1))",
        "[array(ndim=1, dtype=int32), int64]",
        "dtype=int32",
        None,
    ),
    (
        "int32 for int64",
        "x[i] = first(x, i)",
        "[array(ndim=1, dtype=float32), int32]",
        "`count` takes an int64",
        None,
    ),
    ("float32 literal for float16", "h = half(1.0)", "[float32]", "`x` takes a float16", None),
    (
        "bool for int",
        "x[i] = pick(x[i] > 0.0, x[i])",
        "[warp._src.types.bool, float32]",
        "`flag` takes an int32",
        None,
    ),
]


@pytest.mark.parametrize(
    ("body", "warp_types", "rule_says", "fixed_arg"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_mismatched_calls_are_flagged_and_warp_agrees(
    analyse: Analyse, body: str, warp_types: str, rule_says: str, fixed_arg: str | None
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH019"]))
    assert rule_says in record.message, record.message
    assert record.severity.value == "error" and record.location.kernel == "k"
    assert record.related and "is defined here" in record.related[0].message
    error = warp_error(source)
    assert error is not None and "Couldn't find function overload for" in error, error
    assert f"matched inputs with types: {warp_types}" in error, error
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line
    if fixed_arg is None:
        assert record.fix is None
        return
    assert record.fix is not None and record.fix.safe
    assert [e.new_text for e in record.fix.edits] == [fixed_arg]
    fixed, _ = apply_edits(source, record.fix.edits)
    assert analyse(fixed, select=["WH019"]) == []
    assert warp_error(fixed) is None, fixed


def test_the_message_quotes_warp_when_every_type_is_known(analyse: Analyse) -> None:
    record = _only(analyse(kernel("x[i] = spring(x[i], 2, i)"), select=["WH019"]))
    assert (
        "Couldn't find function overload for 'spring' that matched inputs with types: "
        "[float32, int32, int32]" in record.message
    )
    assert "spring(stretch: float, k: float, index: int)" in record.message


GOOD_BODIES = [
    "x[i] = spring(x[i], 2.0, i)",
    "v[i] = scale(v[i]) + scale(v[i], 2.0) + scale(v[i], s=x[i]) + scale(s=1.0, v=v[i])",
    "x[i] = weight(bodies[i], 9.8)",
    "x[i] = first(x, wp.int64(i))",
    "h = half(wp.float16(1.0))",
    "x[i] = pick(1, x[i]) + pick(n[i], 1.0)",
    "x[i] = spring(x[i], wp.float32(2), int(x[i]))",
]


@pytest.mark.parametrize("body", GOOD_BODIES)
def test_matching_calls_pass_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = kernel(body)
    assert analyse(source, select=["WH019"]) == []
    assert warp_error(source) is None


GENERIC = """
import warp as wp
from typing import Any


@wp.func
def accumulate(values: wp.array(dtype=Any), i: int, x: Any):
    values[i] = values[i] + x


@wp.func
def norm_sq(v: wp.types.vector(3, wp.Float)) -> wp.Float:
    return wp.dot(v, v)


@wp.func
def twice(x: wp.Scalar):
    return x + x


@wp.kernel
def k(f: wp.array(dtype=float), d: wp.array(dtype=wp.float64), v: wp.array(dtype=wp.vec3d)):
    i = wp.tid()
    accumulate(f, i, 1.0)
    accumulate(d, i, wp.float64(1.0))
    d[i] = norm_sq(v[i]) + twice(d[i])
    f[i] = twice(f[i])
"""


def test_generic_parameters_take_any_matching_type(analyse: Analyse) -> None:
    assert analyse(GENERIC, select=["WH019"]) == []
    assert warp_error(GENERIC) is None


def test_a_concrete_parameter_of_a_generic_function_is_still_checked(analyse: Analyse) -> None:
    source = GENERIC.replace("accumulate(f, i, 1.0)", "accumulate(f, 1.0, 1.0)")
    record = _only(analyse(source, select=["WH019"]))
    assert "`i` takes an int32" in record.message
    error = warp_error(source)
    assert error is not None and "Couldn't find function overload for 'accumulate'" in error


OVERLOADED = """
import warp as wp


@wp.func
def clamp01(x: float):
    return wp.clamp(x, 0.0, 1.0)


@wp.func
def clamp01(x: wp.float64):
    return wp.clamp(x, wp.float64(0.0), wp.float64(1.0))


@wp.kernel
def k(f: wp.array(dtype=float), d: wp.array(dtype=wp.float64)):
    i = wp.tid()
    f[i] = clamp01(f[i])
    d[i] = clamp01(d[i])
"""


def test_overloaded_functions_are_not_judged(analyse: Analyse) -> None:
    assert analyse(OVERLOADED, select=["WH019"]) == []
    assert warp_error(OVERLOADED) is None


def test_names_that_may_mean_something_else_are_not_judged(analyse: Analyse) -> None:
    # rebound at module level, imported, a method, a function another factory defines
    source = """
import warp as wp
import helpers


@wp.func
def rebound(x: float):
    return x


rebound = helpers.rebound


@wp.func
def shadowed(x: float):
    return x


from helpers import shadowed


class Model:
    @wp.func
    def method(x: float):
        return x


def make_a():
    @wp.func
    def local(x: float):
        return x

    return local


def make_b():
    @wp.kernel
    def k(a: wp.array(dtype=int)):
        i = wp.tid()
        a[i] = rebound(a[i]) + shadowed(a[i]) + method(a[i]) + local(a[i])

    return k
"""
    assert analyse(source, select=["WH019"]) == []


def test_a_factory_checks_its_own_function(analyse: Analyse) -> None:
    source = """
import warp as wp


def make(dim: int):
    @wp.func
    def damp(v: float, c: float):
        return v * c

    @wp.kernel
    def k(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = damp(a[i], 1)

    return k


kernel = make(3)
"""
    record = _only(analyse(source, select=["WH019"]))
    assert "`c` takes a float32" in record.message
    error = warp_error(source)
    warp_says = "Couldn't find function overload for 'make__locals__damp' that matched inputs with types: "
    assert error is not None and warp_says + "[float32, int32]" in error, error
    assert warp_says + "[float32, int32]" in record.message


def test_funcs_calling_funcs_are_checked_too(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.func
def inner(x: float, n: int):
    return x * float(n)


@wp.func
def outer(x: float):
    return inner(x, x)


@wp.kernel
def k(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = outer(a[i])
"""
    record = _only(analyse(source, select=["WH019"]))
    assert record.location.kernel == "outer"
    error = warp_error(source)
    assert error is not None and "Couldn't find function overload for 'inner'" in error


def test_unknown_argument_types_are_not_held_against_a_call(analyse: Analyse) -> None:
    source = """
import warp as wp
import mylib


@wp.func
def f(x: float, n: int):
    return x


@wp.kernel
def k(a: wp.array(dtype=mylib.T)):
    i = wp.tid()
    y = f(a[i], mylib.count)
    z = f(*mylib.args)
"""
    assert analyse(source, select=["WH019"]) == []
