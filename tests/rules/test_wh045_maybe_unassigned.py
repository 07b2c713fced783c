"""WH045: a local read where some path reaches it unassigned (Warp: undefined symbol, or an uninitialised
read), and the definite-assignment analysis under it (warp_harness/model/definite_assignment.py)."""

from __future__ import annotations

import ast

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.fixes import apply_fixes
from warp_harness.model.definite_assignment import unbound_reads
from warp_harness.record import Severity

KERNEL = """
import warp as wp

LIMIT = wp.constant(3.0)


@wp.kernel
def k(x: wp.array(dtype=float), n: int):
    i = wp.tid()
{body}
"""


def _source(body: str) -> str:
    return KERNEL.format(body="".join(f"    {line}\n" for line in body.strip("\n").splitlines()))


# Warp refuses each: no assignment before the read on the path it compiles
REJECTED = [
    "if False:\n    a = 1.0\nx[0] = a",
    "if x[i] > 0.0:\n    y = 1.0\nelse:\n    x[i] = y",
    "for j in range(n):\n    if j > 0:\n        x[i] = prev\n    prev = x[j]",
    "x[i] = later\nlater = 1.0",
]
# Warp compiles each to a read of an uninitialised variable on some path: reported (plain shape)
UNINITIALISED = [
    "if x[i] > 0.0:\n    y = 2.0\nx[i] = y",
    "t = 0.0\nif n > 2:\n    t = 1.0\n    y = x[0]\n    y = y + 1.0\nx[i] = t + y",
]
# correct, or a shape real code uses on purpose: nothing reported, and Warp builds it
ACCEPTED = [
    "if x[i] > 0.0:\n    y = 2.0\nelse:\n    y = 3.0\nx[i] = y",
    "if x[i] > 0.0:\n    y = 2.0\nelif x[i] < 0.0:\n    y = 3.0\nelse:\n    return\nx[i] = y",
    "for j in range(3):\n    y = x[j]\nx[i] = y",
    "y = float(0.0)\nwhile y < 3.0:\n    z = y\n    y += 1.0\nx[i] = z",
    "if n == 0:\n    y = 1.0\nelif n == 1:\n    y = 2.0\nx[i] = y",
    "if n > 0:\n    y = 1.0\nif n > 0:\n    x[i] = y",
    "for j in range(n):\n    if x[j] > 0.0:\n        f = j\n        break\nx[i] = float(f)",
    "if x[i] > 0.0:\n    LIMIT = 2.0\nx[i] = LIMIT",
    "if wp.static(LIMIT > 2.0):\n    y = 1.0\nelse:\n    y = 2.0\nx[i] = y",
]


@pytest.mark.parametrize("body", REJECTED)
def test_reads_with_no_assignment_before_them_are_errors_and_warp_refuses_them(
    analyse: Analyse, body: str
) -> None:
    source = _source(body)
    (record,) = analyse(source, select=["WH045"])
    assert record.severity is Severity.ERROR and "Referencing undefined symbol" in record.message
    error = warp_error(source)
    assert error is not None and "Referencing undefined symbol" in error


@pytest.mark.parametrize("body", UNINITIALISED)
def test_reads_assigned_on_some_paths_are_warnings_warp_compiles(analyse: Analyse, body: str) -> None:
    source = _source(body)
    (record,) = analyse(source, select=["WH045"])
    assert record.severity is Severity.WARNING and "uninitialised" in record.message
    assert warp_error(source) is None


@pytest.mark.parametrize("body", ACCEPTED)
def test_bound_reads_and_deliberate_shapes_are_fine(analyse: Analyse, body: str) -> None:
    source = _source(body)
    assert analyse(source, select=["WH045"]) == []
    assert warp_error(source) is None


def test_the_fix_hoists_a_zero_of_the_variables_type(analyse: Analyse) -> None:
    source = _source("if x[i] > 0.0:\n    y = 2.0\nx[i] = y")
    records = analyse(source, select=["WH045"])
    fixed, applied = apply_fixes(source, records, safe_only=False)
    assert applied == 1 and "    y = 0.0\n    if x[i] > 0.0:" in fixed
    assert analyse(fixed, select=["WH045"]) == []
    assert warp_error(fixed) is None


def test_the_analysis_reports_each_name_once_with_its_bindings() -> None:
    tree = ast.parse("def f(a):\n    if a:\n        b = 1\n    c = b + b\n    return c + d\n")
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    (read,) = unbound_reads(func, ["a"], {})
    assert read.name == "b" and read.node.lineno == 4 and not read.never_bound and read.one_sided
    assert [type(stmt).__name__ for stmt, _ in read.bindings] == ["Assign"]


def test_a_comprehensions_own_loop_variable_is_not_unbound(analyse: Analyse) -> None:
    # WH002 reports the comprehension; its loop variable is bound by the comprehension itself
    source = (
        "import warp as wp\n\n@wp.kernel\ndef saxpy(a: float, y: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    q = [k for k in range(3)]\n    y[i] = a\n"
    )
    assert [r.rule for r in analyse(source)] == ["WH002"]
