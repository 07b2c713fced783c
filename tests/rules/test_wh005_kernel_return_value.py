from __future__ import annotations

from checker_helpers import Analyse
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
