from __future__ import annotations

import re

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.record import Record

HEADER = """import warp as wp

TM = wp.constant(32)
TK = wp.constant(16)
TN = wp.constant(8)


@wp.kernel
def k(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float),
      H: wp.array2d(dtype=wp.float16), I: wp.array2d(dtype=int), v: wp.array(dtype=float)):
"""

CONSISTENT = "Warp refuses it"
WARP_SIZES = "tile_matmul(A, B, C) requires sizes of A, B and C to be consistent for a matmul"


def kernel(body: str) -> str:
    return HEADER + "".join(f"    {line}\n" for line in body.strip().splitlines())


def _only(records: list[Record]) -> Record:
    assert len(records) == 1, [r.message for r in records]
    return records[0]


# (case, body, Warp's error, the rule's message, expected, actual)
BAD = [
    (
        "B transposed",
        """
a = wp.tile_load(A, shape=(TM, TK))
b = wp.tile_load(B, shape=(TN, TK))
c = wp.tile_matmul(a, b)
""",
        WARP_SIZES,
        "A has 16 columns but B has 8 rows",
        {"B": [16, 8]},
        {"A": [32, 16], "B": [8, 16]},
    ),
    (
        "C has the wrong columns",
        """
a = wp.tile_load(A, shape=(TM, TK))
b = wp.tile_load(B, shape=(TK, TN))
c = wp.tile_zeros(shape=(TM, TM), dtype=float)
wp.tile_matmul(a, b, c)
""",
        WARP_SIZES,
        "C has 32 columns but B has 8",
        {"C": [32, 8]},
        {"A": [32, 16], "B": [16, 8], "C": [32, 32]},
    ),
    (
        "C has the wrong rows (keyword out)",
        """
a = wp.tile_load(A, shape=(TM, TK))
b = wp.tile_load(B, shape=(TK, TN))
c = wp.tile_zeros(shape=(TN, TN), dtype=float)
wp.tile_matmul(a, b, out=c)
""",
        WARP_SIZES,
        "C has 8 rows but A has 32",
        {"C": [32, 8]},
        {"A": [32, 16], "B": [16, 8], "C": [8, 8]},
    ),
    (
        "through a transpose",
        """
a = wp.tile_load(A, shape=(TM, TK))
c = wp.tile_matmul(a, wp.tile_transpose(a))
d = wp.tile_matmul(c, a * 2.0)
e = wp.tile_matmul(d, a)
""",
        WARP_SIZES,
        "A has 16 columns but B has 32 rows",
        None,
        None,
    ),
    (
        "1-D operand",
        """
a = wp.tile_load(v, shape=TK)
b = wp.tile_load(B, shape=(TK, TN))
c = wp.tile_matmul(a, b)
""",
        "tuple index out of range",
        "tile_matmul needs 2-D tiles; A (`a`) is a 1-D tile",
        None,
        None,
    ),
    (
        "integer tiles",
        """
a = wp.tile_load(I, shape=(TM, TK))
b = wp.tile_load(I, shape=(TK, TN))
c = wp.tile_zeros(shape=(TM, TN), dtype=int)
wp.tile_matmul(a, b, c)
""",
        "Couldn't find function overload for 'tile_matmul'",
        "holds int32",
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says", "expected", "actual"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_inconsistent_matmuls_are_flagged_and_warp_agrees(
    analyse: Analyse, body: str, warp_says: str, rule_says: str, expected: object, actual: object
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH009"]))
    assert rule_says in record.message, record.message
    if expected is not None:
        assert record.expected == expected and record.actual == actual
        assert CONSISTENT in record.message
    error = warp_error(source)
    assert error is not None and warp_says in error, error
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line


def test_hint_and_related_name_the_operands(analyse: Analyse) -> None:
    record = _only(analyse(kernel(BAD[0][1]), select=["WH009"]))
    assert "must be K x N = 16x8" in (record.hint or "") and "transposed" in (record.hint or "")
    assert [r.location.line for r in record.related] == [11, 12]


GOOD = [
    """
acc = wp.tile_zeros(shape=(TM, TN), dtype=float)
for s in range(4):
    a = wp.tile_load(A, shape=(TM, TK), offset=(0, s * TK))
    b = wp.tile_load(B, shape=(TK, TN), offset=(s * TK, 0))
    wp.tile_matmul(a, b, acc)
wp.tile_store(C, acc)
""",
    """
a = wp.tile_load(A, shape=(TM, TK))
c = wp.tile_matmul(a, wp.tile_transpose(a))
d = wp.tile_matmul(c, a * 2.0)
wp.tile_store(C, d)
""",
    # mixed operand types are accepted by Warp (float16 x float16 into a float32 accumulator)
    """
a = wp.tile_load(H, shape=(TM, TK))
b = wp.tile_load(H, shape=(TK, TN))
c = wp.tile_zeros(shape=(TM, TN), dtype=float)
wp.tile_matmul(a, b, c)
wp.tile_store(C, c)
""",
]


@pytest.mark.parametrize("body", GOOD)
def test_consistent_matmuls_pass_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = kernel(body)
    assert analyse(source, select=["WH009"]) == []
    assert warp_error(source) is None


def test_unknown_shapes_never_fire(analyse: Analyse) -> None:
    source = """
import warp as wp
import mylib


@wp.kernel
def k(A: wp.array2d(dtype=float), n: int):
    a = wp.tile_load(A, shape=(mylib.M, 16))
    b = wp.tile_load(A, shape=(8, 8))
    c = wp.tile_matmul(a, b)
"""
    assert analyse(source, select=["WH009"]) == []
