from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

KERNELS = """
import warp as wp


@wp.kernel
def axpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def offset(n: int, v: wp.vec3, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = float(n) + v[0]
"""

COUNT = (
    KERNELS
    + """

def run():
    x = wp.zeros(4, dtype=float, device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(axpy, dim=4, inputs=[x, y], device="cpu")
"""
)

GOOD = (
    KERNELS
    + """

def run():
    x = wp.ones(4, dtype=float, device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(axpy, dim=4, inputs=[2.0, x], outputs=[y], device="cpu")
    wp.launch(offset, dim=4, inputs=[3, wp.vec3(1.0, 2.0, 3.0), y], device="cpu")
"""
)

# each launch has one argument of a kind that cannot match; run() collects what Warp says about each
KINDS = (
    KERNELS
    + """

def run():
    x = wp.zeros(4, dtype=float, device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    errors = []
    try:
        wp.launch(axpy, dim=4, inputs=[x, x, y], device="cpu")
    except Exception as exc:
        errors.append(str(exc))
    try:
        wp.launch(axpy, dim=4, inputs=[1.0, 2.0, y], device="cpu")
    except Exception as exc:
        errors.append(str(exc))
    try:
        wp.launch(offset, dim=4, inputs=[1.5, wp.vec3(), y], device="cpu")
    except Exception as exc:
        errors.append(str(exc))
    try:
        wp.launch(offset, dim=4, inputs=[1, 1.0, y], device="cpu")
    except Exception as exc:
        errors.append(str(exc))
    raise RuntimeError(f"{len(errors)} launches failed: " + " || ".join(errors))
"""
)


def test_wrong_argument_count_is_flagged_and_warp_agrees(analyse: Analyse) -> None:
    (record,) = analyse(COUNT, select=["WH006"])
    assert record.rule == "WH006" and record.severity.value == "error"
    assert (
        record.location.line
        == COUNT.splitlines().index('    wp.launch(axpy, dim=4, inputs=[x, y], device="cpu")') + 1
    )
    assert "passes 2 arguments" in record.message and "3 parameters" in record.message
    assert (record.expected, record.actual) == (3, 2)
    assert "missing `y`" in (record.hint or "")
    (related,) = record.related
    assert related.location.line == 6 and "axpy" in related.message  # the `def axpy(` line
    error = warp_error(COUNT, launch=True)
    assert error is not None and "passed 2 arguments but kernel requires 3" in error


def test_too_many_arguments_across_inputs_and_outputs(analyse: Analyse) -> None:
    source = KERNELS + "\n\ndef run(x, y):\n    wp.launch(axpy, 4, [1.0], [x, y, y])\n"
    (record,) = analyse(source, select=["WH006"])
    assert "(1 in inputs, 3 in outputs)" in record.message and "remove 1 argument" in (record.hint or "")


def test_matching_launch_passes_and_warp_runs_it(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH006"]) == []
    assert warp_error(GOOD, launch=True) is None


def test_certain_kind_mismatches_are_flagged_and_warp_rejects_each(analyse: Analyse) -> None:
    records = analyse(KINDS, select=["WH006"])
    found = [(r.location.line, r.message.split(" of ")[0]) for r in records]
    lines = KINDS.splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(lines, 1) if text in line)

    assert found == [
        (line_of("inputs=[x, x, y]"), "argument `x` for parameter `a`"),
        (line_of("inputs=[1.0, 2.0, y]"), "argument `2.0` for parameter `x`"),
        (line_of("inputs=[1.5, wp.vec3(), y]"), "argument `1.5` for parameter `n`"),
        (line_of("inputs=[1, 1.0, y]"), "argument `1.0` for parameter `v`"),
    ]
    assert "is a Warp array, but the parameter is a scalar (float32)" in records[0].message
    assert "is a float literal, but the parameter is an array" in records[1].message
    assert "an integer scalar (int32)" in records[2].message
    assert "a single float" in records[3].message
    error = warp_error(KINDS, launch=True)
    assert error is not None and "4 launches failed" in error
    for expected in (
        "unable to pack kernel parameter type",
        "argument 'x' expects an array",
        "expects vec3f but got a single value of type float",
    ):
        assert expected in error


def test_unknown_kernels_and_non_literal_lists_are_not_judged(analyse: Analyse) -> None:
    source = (
        KERNELS
        + """

def run(kernel, args, axpy2, x):
    wp.launch(kernel, dim=4, inputs=[x])
    wp.launch(axpy, dim=4, inputs=args)
    wp.launch(axpy, dim=4, inputs=[*args])
    wp.launch(axpy, dim=4, **args)
    wp.launch(missing_kernel, dim=4, inputs=[x])


def shadowed(axpy, x):
    wp.launch(axpy, dim=4, inputs=[x])
"""
    )
    assert analyse(source, select=["WH006"]) == []


def test_an_empty_launch_is_not_checked_by_warp_either(analyse: Analyse) -> None:
    source = (
        KERNELS
        + """

def run():
    x = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(axpy, dim=0, inputs=[x], device="cpu")
"""
    )
    assert analyse(source, select=["WH006"]) == []
    assert warp_error(source, launch=True) is None


def test_none_for_an_array_is_accepted(analyse: Analyse) -> None:
    source = KERNELS + "\n\ndef run(y):\n    wp.launch(axpy, dim=4, inputs=[1.0, None, y])\n"
    assert analyse(source, select=["WH006"]) == []


# values whose kind the launching function declares: its parameters' annotations and defaults, a
# literal it assigns once. Each `step_*` is called from run() with values of the declared kinds.
DECLARED = (
    KERNELS
    + """

def step_annotated(count: float, y: wp.array(dtype=float)):
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y], device="cpu")


def step_default(y, count=2.0):
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y], device="cpu")


def step_array(y: wp.array(dtype=float)):
    wp.launch(axpy, dim=4, inputs=[y, y, y], device="cpu")


def step_vector(gravity: float, y: wp.array(dtype=float)):
    wp.launch(offset, dim=4, inputs=[1, gravity, y], device="cpu")


def step_local(y):
    count = 2.5
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y], device="cpu")


def run():
    y = wp.zeros(4, dtype=float, device="cpu")
    errors = []
    for call in (
        lambda: step_annotated(2.0, y),
        lambda: step_default(y),
        lambda: step_array(y),
        lambda: step_vector(9.8, y),
        lambda: step_local(y),
    ):
        try:
            call()
        except Exception as exc:
            errors.append(str(exc))
    raise RuntimeError(f"{len(errors)} launches failed: " + " | ".join(errors))
"""
)


@pytest.mark.slow
def test_kinds_the_launching_function_declares_are_checked(analyse: Analyse) -> None:
    records = analyse(DECLARED, select=["WH006"])
    lines = DECLARED.splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(lines, 1) if text in line)

    found = sorted((r.location.line, r.severity.value, r.message) for r in records)
    launches = [n for n, line in enumerate(lines, 1) if "wp.launch(" in line]
    assert [line for line, _, _ in found] == launches
    by_line = {line: (severity, message) for line, severity, message in found}
    assert by_line[launches[0]] == (
        "warning",
        "argument `count` for parameter `n` of `offset` is a float (`count: float` in `step_annotated`), "
        "but the parameter is an integer scalar (int32)",
    )
    assert (
        by_line[launches[1]][0] == "warning" and "(`count=2.0` in `step_default`)" in by_line[launches[1]][1]
    )
    assert by_line[launches[2]][0] == "warning" and "is a Warp array" in by_line[launches[2]][1]
    assert by_line[launches[3]][0] == "warning" and "but the parameter is a vector" in by_line[launches[3]][1]
    # a literal the function itself assigns once is as certain as the literal
    assert by_line[launches[4]] == (
        "error",
        "argument `count` for parameter `n` of `offset` is a float (`count = 2.5`), "
        "but the parameter is an integer scalar (int32)",
    )
    assert line_of("count = 2.5") < launches[4]
    error = warp_error(DECLARED, launch=True)
    assert error is not None and "5 launches failed" in error, error
    assert error.count("unable to pack kernel parameter type <class 'float'> for param n") == 3
    assert "unable to pack kernel parameter type <class 'warp._src.types.array'> for param a" in error
    assert "expects vec3f but got a single value of type float" in error


DECLARED_GOOD = (
    KERNELS
    + """

def step(count: int, rate: float, flag: bool, y: wp.array(dtype=float), scale=2):
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y], device="cpu")
    wp.launch(axpy, dim=4, inputs=[rate, y, y], device="cpu")
    wp.launch(axpy, dim=4, inputs=[count, y, y], device="cpu")
    wp.launch(offset, dim=4, inputs=[flag, wp.vec3(), y], device="cpu")
    wp.launch(offset, dim=4, inputs=[scale, wp.vec3(), y], device="cpu")


def step_converted(count: float, y):
    count = int(count)
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y], device="cpu")


def run():
    y = wp.zeros(4, dtype=float, device="cpu")
    step(3, 0.5, True, y)
    step_converted(3.0, y)
"""
)


@pytest.mark.slow
def test_declared_kinds_that_warp_accepts_pass(analyse: Analyse) -> None:
    """An int for a float parameter, a bool for an int, a converted value: Warp launches them all."""
    assert analyse(DECLARED_GOOD, select=["WH006"]) == []
    assert warp_error(DECLARED_GOOD, launch=True) is None


# `count` is a float parameter (or a once-assigned float) in each function; only `plain` never rebinds it
REBOUND = (
    KERNELS
    + """
LIMIT = 2.5


def plain(y, count: float):
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y])


def by_lambda(y, count: float):
    key = lambda count: count + 1
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y])


def by_nested(y, count: float):
    def inner(count=1):
        return count
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y])


def by_walrus(y, count: float):
    sizes = [(count := s) for s in range(3)]
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y])


def by_del(y, count: float):
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y])
    del count


def by_loop(y, count: float):
    for count in range(2):
        pass
    wp.launch(offset, dim=4, inputs=[count, wp.vec3(), y])


def rebinds_limit():
    global LIMIT
    LIMIT = 3


wp.launch(offset, dim=4, inputs=[LIMIT, wp.vec3(), y])
"""
)


def test_a_name_the_function_rebinds_anywhere_is_not_judged_by_its_declaration(analyse: Analyse) -> None:
    records = analyse(REBOUND, select=["WH006"])
    lines = REBOUND.splitlines()
    plain = next(n for n, line in enumerate(lines, 1) if line == "def plain(y, count: float):") + 1
    # a lambda's or nested function's parameter, a walrus, `del`, a loop, a `global` elsewhere: all rebind
    assert [(r.location.line, r.severity.value) for r in records] == [(plain, "warning")]
