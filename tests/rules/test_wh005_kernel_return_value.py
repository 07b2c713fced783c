from __future__ import annotations

import pytest
from checker_helpers import Analyse, rules_of
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes

BAD = """
import warp as wp

@wp.kernel
def norm(x: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    if i >= x.shape[0]:
        return
    out[i] = wp.length(x[i])
    return wp.length(x[i])
"""


def test_kernel_returning_a_value_is_flagged_and_warp_agrees(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH005"])
    assert record.location.line == 10 and "cannot return values" in record.message
    error = warp_error(BAD)
    assert error is not None and "Warp kernels cannot return values" in error


def test_bare_return_and_func_return_are_fine(analyse: Analyse) -> None:
    good = BAD.replace("    return wp.length(x[i])\n", "") + (
        "\n@wp.func\ndef f(v: wp.vec3) -> float:\n    return wp.length(v)\n"
    )
    assert analyse(good, select=["WH005"]) == []
    assert warp_error(good) is None


def test_fix_is_unsafe_but_yields_a_kernel_warp_accepts(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH005"])
    assert record.fix is not None and not record.fix.safe
    unchanged, applied = apply_fixes(BAD, [record])
    assert applied == 0 and unchanged == BAD
    fixed, applied = apply_fixes(BAD, [record], safe_only=False)
    assert applied == 1
    assert analyse(fixed, select=["WH005"]) == []
    assert warp_error(fixed) is None


RETURN_NONE = """
import warp as wp

@wp.kernel
def clear_inactive(active: wp.array(dtype=wp.int32), forces: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    if active[i] == 0:
        return None
    forces[i] = wp.vec3(0.0)
"""


def test_return_none_in_a_kernel_is_flagged_with_a_safe_fix_and_warp_agrees(analyse: Analyse) -> None:
    (record,) = analyse(RETURN_NONE, select=["WH005"])
    assert record.location.line == 8 and "returns `None`" in record.message
    error = warp_error(RETURN_NONE)
    assert error is not None and "None type unsupported" in error
    assert record.fix is not None and record.fix.safe
    fixed, applied = apply_fixes(RETURN_NONE, [record])
    assert applied == 1 and "        return\n" in fixed
    assert analyse(fixed, select=["WH005"]) == []
    assert warp_error(fixed) is None


FUNC_BARE_RETURN = """
import warp as wp

@wp.func
def contact_depth(p: wp.vec3, radius: float) -> float:
    d = wp.length(p) - radius
    if d > 0.0:
        return
    return -d

@wp.kernel
def depths(points: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = contact_depth(points[i], 0.5)

def run():
    points = wp.array([wp.vec3(0.1, 0.0, 0.0), wp.vec3(1.0, 0.0, 0.0)], dtype=wp.vec3, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(depths, dim=2, inputs=[points, out], device="cpu")
"""


@pytest.mark.slow
def test_bare_return_in_a_func_declared_to_return_a_value_is_flagged_and_warp_rejects_it(
    analyse: Analyse,
) -> None:
    """Warp's code generator lets the bare `return` through when it comes before the valued one; the C++
    compiler then refuses it (`non-void function ... should return a value`): a launch on the CPU."""
    (record,) = analyse(FUNC_BARE_RETURN, select=["WH005"])
    assert record.location.line == 8 and "declared to return `float`" in record.message
    assert record.fix is None
    error = warp_error(FUNC_BARE_RETURN, launch=True)
    assert error is not None and "build failed" in error
    # after the valued return, Warp's code generator itself raises
    swapped = FUNC_BARE_RETURN.replace(
        "    if d > 0.0:\n        return\n    return -d\n", "    if d < 0.0:\n        return -d\n    return\n"
    )
    (record,) = analyse(swapped, select=["WH005"])
    assert record.location.line == 9
    assert warp_error(swapped) is not None
    good = FUNC_BARE_RETURN.replace("        return\n", "        return 0.0\n")
    assert analyse(good, select=["WH005"]) == []
    assert warp_error(good, launch=True) is None


def test_func_return_none_is_flagged_and_bare_return_without_a_value_annotation_is_not(
    analyse: Analyse,
) -> None:
    source = """
import warp as wp

@wp.func
def scale_in_place(x: wp.array(dtype=float), s: float):
    if s == 1.0:
        return
    x[0] = x[0] * s

@wp.func
def reset(x: wp.array(dtype=float)) -> None:
    if x[0] == 0.0:
        return None
    x[0] = 0.0

@wp.kernel
def k(x: wp.array(dtype=float)):
    scale_in_place(x, 2.0)
    reset(x)
"""
    (record,) = analyse(source, select=["WH005"])
    assert record.location.line == 13 and "func `reset` returns `None`" in record.message
    error = warp_error(source)
    assert error is not None and "None type unsupported" in error
    fixed, applied = apply_fixes(source, [record])
    assert applied == 1
    assert analyse(fixed, select=["WH005"]) == []
    assert warp_error(fixed) is None


def test_kernel_declared_to_return_a_type_is_flagged_even_without_a_value(analyse: Analyse) -> None:
    source = """
import warp as wp

@wp.kernel
def integrate(x: wp.array(dtype=float), v: wp.array(dtype=float), dt: float) -> float:
    i = wp.tid()
    if i >= x.shape[0]:
        return
    x[i] = x[i] + v[i] * dt
"""
    (record,) = analyse(source, select=["WH005"])
    assert record.location.line == 5 and "declared to return `float`" in record.message
    error = warp_error(source)
    assert error is not None and "Warp kernels cannot return values" in error
    assert record.fix is not None and record.fix.safe
    fixed, applied = apply_fixes(source, [record])
    assert applied == 1 and "dt: float):\n" in fixed
    assert analyse(fixed, select=["WH005"]) == []
    assert warp_error(fixed) is None
    for annotation in ("None", "types.NoneType"):
        ok = "import types\n" + source.replace("-> float", f"-> {annotation}")
        assert analyse(ok, select=["WH005"]) == []
        assert warp_error(ok) is None


def test_a_kernel_return_value_counts_even_in_an_untaken_static_branch(analyse: Analyse) -> None:
    """Warp looks for a kernel's `return value` in the whole syntax tree, before it drops static branches."""
    source = """
import warp as wp

DEBUG = False

@wp.kernel
def k(x: wp.array(dtype=float)):
    i = wp.tid()
    if wp.static(DEBUG):
        return None
    x[i] = 1.0
"""
    assert rules_of(analyse(source, select=["WH005"])) == ["WH005"]
    error = warp_error(source)
    assert error is not None and "Warp kernels cannot return values" in error


def test_returns_in_an_untaken_static_branch_of_a_func_or_an_abstract_func_are_not_reported(
    analyse: Analyse,
) -> None:
    source = """
import warp as wp

DEBUG = False

class Integrator:
    @wp.func
    def step(x: float, dt: float) -> float:
        raise NotImplementedError

@wp.func
def checked(x: float) -> float:
    if wp.static(DEBUG):
        return None
    return x

@wp.kernel
def k(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = checked(x[i])
"""
    assert analyse(source, select=["WH005"]) == []
    assert warp_error(source) is None
    debug = source.replace("DEBUG = False", "DEBUG = True")
    assert rules_of(analyse(debug, select=["WH005"])) == ["WH005"]
    error = warp_error(debug)
    assert error is not None and "None type unsupported" in error
