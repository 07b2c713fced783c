from __future__ import annotations

import re

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_edits
from warp_harness.record import Record

HEADER = """import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float), n: wp.array(dtype=int), v: wp.array(dtype=wp.vec3)):
    i = wp.tid()
"""


def kernel(body: str, header: str = HEADER) -> str:
    return header + "".join(f"    {line}\n" for line in body.strip().splitlines())


def _only(records: list[Record]) -> Record:
    assert len(records) == 1, [r.message for r in records]
    return records[0]


# (case, body, Warp's error, the rule's message, the fix's replacement or None)
BAD = [
    (
        "unknown function",
        "x[i] = wp.sqroot(x[i])",
        "Could not find function wp.sqroot",
        "`wp.sqroot` is not a Warp function",
        "wp.sqrt",
    ),
    (
        "unknown name",
        "x[i] = wp.pii * 2.0",
        "`pii` is not an attribute",
        "`wp.pii` is not a Warp name",
        "wp.pi",
    ),
    (
        "misspelt vector",
        "v[i] = wp.vecc3(1.0, 2.0, 3.0)",
        "Could not find function wp.vecc3",
        "`wp.vecc3` is not a Warp function",
        "wp.vec3",
    ),
    (
        "too many arguments",
        "x[i] = wp.sqrt(x[i], 2.0)",
        "Couldn't find function overload for 'sqrt'",
        "wp.sqrt takes 1 argument, got 2",
        None,
    ),
    (
        "int where a float is needed",
        "x[i] = wp.sqrt(n[i])",
        "Couldn't find function overload for 'sqrt'",
        "no overload of wp.sqrt accepts arguments (int32)",
        None,
    ),
    (
        "unknown keyword",
        "x[i] = wp.sqrt(y=x[i])",
        "Couldn't find function overload for 'sqrt'",
        "unexpected keyword argument 'y'",
        None,
    ),
    (
        "missing argument",
        "x[i] = wp.dot(v[i])",
        "Couldn't find function overload for 'dot'",
        "wp.dot takes",
        None,
    ),
    (
        "host function in a kernel",
        "wp.synchronize()",
        "Could not find function wp.synchronize",
        "`wp.synchronize` is a host-side Warp function",
        None,
    ),
]


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says", "replacement"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_bad_builtin_calls_are_flagged_and_warp_agrees(
    analyse: Analyse, body: str, warp_says: str, rule_says: str, replacement: str | None
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH004"]))
    assert rule_says in record.message and record.location.kernel == "k"
    assert record.location.line == 7
    error = warp_error(source)
    assert error is not None and warp_says in error, error
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line
    if replacement is None:
        assert record.fix is None
        return
    assert record.fix is not None and record.fix.edits[0].new_text == replacement
    assert f"did you mean `{replacement}`" in (record.hint or "")
    fixed, _ = apply_edits(source, record.fix.edits)
    assert analyse(fixed, select=["WH004"]) == []
    assert warp_error(fixed) is None, fixed


def test_signatures_are_in_the_hint(analyse: Analyse) -> None:
    record = _only(analyse(kernel("x[i] = wp.sqrt(n[i])"), select=["WH004"]))
    assert "sqrt(x: Float) -> Float" in (record.hint or "")


GOOD_BODIES = [
    "x[i] = wp.sqrt(x[i]) + wp.sin(x[i]) * wp.pi",
    "x[i] = wp.sqrt(float(n[i]))",
    "v[i] = wp.normalize(v[i]) * wp.length(v[i]) + wp.vec3(1.0, 2.0, 3.0)",
    "x[i] = wp.dot(v[i], v[i]) + wp.min(x[i], 1.0) + wp.clamp(x[i], 0.0, 1.0)",
    "m = wp.mat33(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)\nv[i] = m * v[i]",
    "wp.atomic_add(x, 0, 1.0)\nwp.atomic_max(n, 0, i)",
    "x[i] = wp.where(i > 0, x[i], 2.0)",
    "x[i] = wp.float32(n[i]) + float(wp.int32(x[i]))",
    "s = wp.static(2 * 3)\nn[i] = s",
    "q = wp.quat_identity()\nv[i] = wp.quat_rotate(q, v[i])",
    "state = wp.rand_init(42, i)\nx[i] = wp.randf(state)",
    "x[i] = wp.abs(x[i]) + wp.floor(x[i]) + wp.exp(x[i]) + wp.log(x[i] + 1.0)",
]


@pytest.mark.parametrize("body", GOOD_BODIES)
def test_valid_calls_pass_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = kernel(body)
    assert analyse(source, select=["WH004"]) == []
    assert warp_error(source) is None


def test_host_side_warp_names_outside_kernels_are_fine(analyse: Analyse) -> None:
    source = """
import warp as wp

wp.config.verify_fp = True
wp.set_module_options({"enable_backward": False})


@wp.kernel
def k(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0


def run():
    wp.init()
    x = wp.zeros(10, dtype=float)
    wp.launch(k, dim=10, inputs=[x])
    wp.synchronize()
    return wp.get_device().name
"""
    assert analyse(source, select=["WH004"]) == []
    assert warp_error(source) is None


def test_special_forms_are_not_host_functions(analyse: Analyse) -> None:
    # wp.grad(f)(x) is legal inside a kernel (warp's own example_particle_repulsion.py uses it)
    source = """
import warp as wp


@wp.func
def energy(x: wp.vec3) -> float:
    return wp.dot(x, x)


@wp.kernel
def k(x: wp.array(dtype=wp.vec3), g: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    g[i] = wp.grad(energy)(x[i])
"""
    assert analyse(source, select=["WH004"]) == []


def test_alias_and_plain_import(analyse: Analyse) -> None:
    source = kernel(
        "x[i] = warp.sqroot(x[i])",
        header=HEADER.replace("import warp as wp", "import warp").replace("wp.", "warp."),
    )
    record = _only(analyse(source, select=["WH004"]))
    assert record.fix is not None and record.fix.edits[0].new_text == "warp.sqrt"


def test_unknown_argument_types_are_not_held_against_a_call(analyse: Analyse) -> None:
    source = """
import warp as wp
import mylib


@wp.kernel
def k(x: wp.array(dtype=mylib.T)):
    i = wp.tid()
    y = wp.sqrt(x[i])
    z = wp.length(mylib.value)
"""
    assert analyse(source, select=["WH004"]) == []


def test_names_the_file_adds_to_warp_are_known(analyse: Analyse) -> None:
    # a submodule reached through `import warp.x.y`, and builtins registered at import (as warp's tests do)
    source = """
import warp
import warp.tests.aux_test_compile_consts_dummy
import warp as wp

wp.build_experimental.add_builtin("my_native_scale", {"x": wp.float32}, wp.float32, native_name="scale")


@wp.kernel
def k(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = wp.my_native_scale(x[i]) + float(warp.tests.aux_test_compile_consts_dummy.MINUS_ONE)
"""
    assert analyse(source, select=["WH004"]) == []


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says"),
    [
        (
            "y = math.hypot(x[i], x[i])",
            "Could not find function math.hypot",
            "`math.hypot` has no Warp builtin",
        ),
        ("y = math.sqrt(n[i])", "Couldn't find function overload for 'sqrt'", "no overload of wp.sqrt"),
    ],
)
def test_math_functions_are_warp_builtins(
    analyse: Analyse, body: str, warp_says: str, rule_says: str
) -> None:
    source = kernel(body, header="import math\n" + HEADER)
    record = _only(analyse(source, select=["WH004"]))
    assert rule_says in record.message
    error = warp_error(source)
    assert error is not None and warp_says in error
    good = kernel(
        "y = math.sqrt(x[i]) + math.floor(x[i]) * math.pi + math.exp(float(n[i]))",
        header="import math\n" + HEADER,
    )
    assert analyse(good, select=["WH004"]) == [] and warp_error(good) is None


# Warp's own checks of a call that overload matching accepts (its value_funcs), and removed builtins
VALUE_CHECKS = [
    (
        "where with branches of two types",
        "n[i] = wp.where(x[i] > 0.0, 1, 0.0)",
        "where() true value type",
        'where() true value type (int32) must be of the same type as the false type (float32)"',
    ),
    (
        "where with a vector and a float",
        "v[i] = wp.where(x[i] > 0.0, v[i], 0.0)",
        "where() true value type",
        "(vec3f) must be of the same type as the false type (float32)",
    ),
    (
        "atomic_add of a float into an int array",
        "wp.atomic_add(n, i, 1.0)",
        "atomic_add() value argument type (float32) must be of the same type as the array (int32)",
        "atomic_add() value argument type (float32) must be of the same type as the array (int32)",
    ),
    (
        "atomic_max of an int into a float array",
        "wp.atomic_max(x, i, 1)",
        "atomic_max() value argument type (int32)",
        "atomic_max() value argument type (int32) must be of the same type as the array (float32)",
    ),
]


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says"), [c[1:] for c in VALUE_CHECKS], ids=[c[0] for c in VALUE_CHECKS]
)
def test_warps_own_argument_checks_are_applied(
    analyse: Analyse, body: str, warp_says: str, rule_says: str
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH004"]))
    assert rule_says in record.message, record.message
    error = warp_error(source)
    assert error is not None and warp_says in error, error
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line


def test_select_was_removed_and_the_fix_swaps_to_where(analyse: Analyse) -> None:
    source = kernel("x[i] = wp.select(x[i] > 0.0, 0.0, x[i])")
    record = _only(analyse(source, select=["WH004"]))
    assert "wp.select() has been removed (Warp 1.10)" in record.message
    error = warp_error(source)
    assert error is not None and "wp.select() has been removed" in error
    assert record.fix is not None and record.fix.safe
    fixed, _ = apply_edits(source, record.fix.edits)
    # select(c, if_false, if_true) is where(c, if_true, if_false)
    assert "x[i] = wp.where(x[i] > 0.0, x[i], 0.0)" in fixed
    assert analyse(fixed, select=["WH004"]) == [] and warp_error(fixed) is None


def test_the_removed_matrix_overload_is_reported(analyse: Analyse) -> None:
    source = kernel("m = wp.matrix(v[i], wp.quat_identity(), v[i])")
    record = _only(analyse(source, select=["WH004"]))
    assert "wp.matrix() has been removed" in record.message and "transform_compose" in record.message
    error = warp_error(source)
    assert error is not None
    good = kernel("m = wp.transform_compose(v[i], wp.quat_identity(), v[i])")
    assert analyse(good, select=["WH004"]) == [] and warp_error(good) is None


def test_types_through_calls_reach_the_signatures(analyse: Analyse) -> None:
    # the where of two ints is an int, which sqrt does not take; the vector of the where is a vec3
    source = kernel("x[i] = wp.sqrt(wp.where(x[i] > 0.0, 1, 2))")
    record = _only(analyse(source, select=["WH004"]))
    assert "no overload of wp.sqrt accepts arguments (int32)" in record.message
    error = warp_error(source)
    assert error is not None and "Couldn't find function overload for 'sqrt'" in error
    good = kernel("x[i] = wp.length(wp.where(x[i] > 0.0, v[i], wp.vec3(0.0)))")
    assert analyse(good, select=["WH004"]) == [] and warp_error(good) is None


def test_constants_of_a_declared_type_are_taken_as_that_type(analyse: Analyse) -> None:
    """As in newton's BVH code: ``wp.uint32`` constant against a ``uint32`` value (a Python int would say
    int32)."""
    source = """
import warp as wp

INACTIVE = wp.constant(wp.uint32(0xFFFFFFFF))


@wp.kernel
def k(leaves: wp.array(dtype=wp.uint32), keep: wp.array(dtype=bool), out: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    out[i] = wp.where(keep[i], leaves[i], INACTIVE)
    wp.atomic_min(out, 0, INACTIVE)
"""
    assert analyse(source, select=["WH004"]) == []
    assert warp_error(source) is None
