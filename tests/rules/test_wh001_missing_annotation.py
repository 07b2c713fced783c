from __future__ import annotations

from checker_helpers import Analyse
from warp_oracle import warp_error

BAD = """
import warp as wp

@wp.kernel
def scale(x: wp.array(dtype=float), s):
    i = wp.tid()
    x[i] = x[i] * s
"""

GOOD = BAD.replace("s):", "s: float):")


def test_flags_missing_annotation_and_warp_agrees(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH001"])
    assert [(r.rule, r.location.line, r.location.col) for r in records] == [("WH001", 5, 36)]
    assert "`s`" in records[0].message and records[0].location.kernel == "scale"
    error = warp_error(BAD)
    assert error is not None and "Incomplete argument annotations" in error


def test_annotated_kernel_passes_and_warp_agrees(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH001"]) == []
    assert warp_error(GOOD) is None


def test_func_parameters_are_checked_too(analyse: Analyse) -> None:
    source = "import warp\n\n@warp.func\ndef f(a, b: float):\n    return a + b\n"
    assert [r.message for r in analyse(source, select=["WH001"])] == [
        "parameter `a` of func `f` has no type annotation"
    ]
