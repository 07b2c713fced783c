"""WH040: a type-annotated local in a kernel or function (Warp refuses `ast.AnnAssign`)."""

from __future__ import annotations

from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.record import Severity

BAD = """
import warp as wp


@wp.func
def vec_add(a: wp.vec3, b: wp.vec3) -> wp.vec3:
    c: wp.vec3 = a + b
    return c


@wp.kernel
def k(x: wp.array(dtype=wp.vec3), n: wp.array(dtype=int)):
    i = wp.tid()
    total: int
    x[i] = vec_add(x[i], x[i])
"""


def test_annotated_locals_are_errors_with_warps_message(analyse: Analyse) -> None:
    first, second = analyse(BAD, select=["WH040"])
    assert first.severity is Severity.ERROR and first.location.line == 7
    assert "Construct `ast.AnnAssign` not supported in kernels." in first.message
    assert second.location.line == 14 and second.fix is None  # nothing to keep without a value
    error = warp_error(BAD)
    assert error is not None and "ast.AnnAssign" in error


def test_the_fix_drops_the_annotation_and_warp_builds_the_result(analyse: Analyse) -> None:
    source = BAD.replace("    total: int\n", "")
    records = analyse(source, select=["WH040"])
    assert records[0].fix is not None and not records[0].fix.safe
    fixed, applied = apply_fixes(source, records, safe_only=False)
    assert applied == 1 and "    c = a + b\n" in fixed
    assert analyse(fixed, select=["WH040"]) == []
    assert warp_error(fixed) is None


def test_annotations_outside_kernels_and_in_signatures_are_fine(analyse: Analyse) -> None:
    source = """
import warp as wp

N: int = 4


def host(n: int) -> int:
    m: int = n + 1
    return m


@wp.kernel
def k(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = s
"""
    assert analyse(source, select=["WH040"]) == []
    assert warp_error(source) is None
