from __future__ import annotations

import re

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.record import Record

HEADER = """import warp as wp

T = wp.constant(16)


@wp.kernel
def k(a1: wp.array(dtype=float), a2: wp.array2d(dtype=float), a3: wp.array3d(dtype=float)):
    i = wp.tid()
"""


def kernel(body: str) -> str:
    return HEADER + "".join(f"    {line}\n" for line in body.strip().splitlines())


def _only(records: list[Record]) -> Record:
    assert len(records) == 1, [r.message for r in records]
    return records[0]


# (case, body, Warp's error, the rule's message, expected rank, actual rank)
BAD = [
    (
        "2-D shape on a 1-D array",
        "t = wp.tile_load(a1, shape=(T, T))",
        "tile_load() array argument must have same number of dimensions as the tile shape",
        "tile_load of a 2-D tile (shape `(T, T)`) from `a1`, a 1-D array",
        1,
        2,
    ),
    (
        "1-D shape on a 2-D array",
        "t = wp.tile_load(a2, shape=T)",
        "trying to perform an 1 dimensional load from an array with 2 dimensions",
        "tile_load of a 1-D tile (shape `T`) from `a2`, a 2-D array",
        2,
        1,
    ),
    (
        "positional shape",
        "t = wp.tile_load(a3, (T, T))",
        "same number of dimensions as the tile shape",
        "a 3-D array",
        3,
        2,
    ),
    (
        "short offset",
        "t = wp.tile_load(a2, shape=(T, T), offset=(i * T,))",
        "tile_load() offset argument must have the same number of dimensions as the array",
        "tile_load offset `(i * T,)` has 1 index for `a2`, a 2-D array",
        2,
        1,
    ),
    (
        "scalar offset on a 2-D array",
        "t = wp.tile_load(a2, shape=(T, T), offset=i * T)",
        "Couldn't find function overload for 'tile_load'",
        "has 1 index for `a2`",
        2,
        1,
    ),
    (
        "2-D tile into a 1-D array",
        "t = wp.tile_load(a2, shape=(T, T))\nwp.tile_store(a1, t)",
        "tile_store() 'a' argument must have the same number of dimensions as the 't' argument",
        "tile_store of a 2-D tile (`t`) into `a1`, a 1-D array",
        1,
        2,
    ),
    (
        "matmul result into a 1-D array",
        "t = wp.tile_load(a2, shape=(T, T))\nc = wp.tile_matmul(t, t)\nwp.tile_store(a1, c, offset=i)",
        "tile_store() 'a' argument must have the same number of dimensions",
        "of a 2-D tile (`c`)",
        1,
        2,
    ),
    (
        "store offset",
        "t = wp.tile_load(a2, shape=(T, T))\nwp.tile_store(a2, t, offset=(i,))",
        "tile_store() 'a' argument must have 1 dimensions, calculated based on the provided offset arguments",
        "tile_store offset `(i,)` has 1 index for `a2`",
        2,
        1,
    ),
    (
        "atomic add",
        "t = wp.tile_load(a2, shape=(T, T))\nwp.tile_atomic_add(a3, t)",
        "tile_atomic_add() 'a' argument must have the same number of dimensions as the 't' argument",
        "tile_atomic_add of a 2-D tile (`t`) into `a3`, a 3-D array",
        3,
        2,
    ),
]


@pytest.mark.parametrize(
    ("body", "warp_says", "rule_says", "expected", "actual"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_rank_mismatches_are_flagged_and_warp_agrees(
    analyse: Analyse, body: str, warp_says: str, rule_says: str, expected: int, actual: int
) -> None:
    source = kernel(body)
    record = _only(analyse(source, select=["WH014"]))
    assert rule_says in record.message, record.message
    assert (record.expected, record.actual) == (expected, actual)
    error = warp_error(source)
    assert error is not None and warp_says in error, error
    match = re.search(r"wh_oracle_\d+\.py:(\d+)", error)
    assert match is not None and int(match.group(1)) == record.location.line


GOOD = [
    "t = wp.tile_load(a1, shape=T, offset=i * T)\nwp.tile_store(a1, t, offset=i * T)",
    "t = wp.tile_load(a1, shape=(T,), offset=(i * T,))\nwp.tile_atomic_add(a1, t)",
    "t = wp.tile_load(a2, shape=(T, T), offset=(i * T, 0))\nwp.tile_store(a2, t, offset=(0, i * T))",
    "t = wp.tile_load(a3, shape=(2, 2, 2))\nwp.tile_store(a3, t)",
    "t = wp.tile_load(a2, shape=(T, T))\ns = wp.tile_sum(t)\nwp.tile_store(a1, s)",
    "t = wp.tile_load(a2, shape=(T, T))\nr = wp.tile_reshape(t, shape=(256,))\nwp.tile_store(a1, r)",
]


@pytest.mark.parametrize("body", GOOD)
def test_matching_ranks_pass_and_warp_agrees(analyse: Analyse, body: str) -> None:
    source = kernel(body)
    assert analyse(source, select=["WH014"]) == []
    assert warp_error(source) is None


def test_unknown_ranks_never_fire(analyse: Analyse) -> None:
    source = """
import warp as wp
import mylib


@wp.kernel
def k(a: wp.array(dtype=float), b: mylib.ArrayType):
    t = wp.tile_load(b, shape=(16, 16))
    u = wp.tile_load(a, shape=mylib.SHAPE)
    wp.tile_store(a, mylib.make_tile())
"""
    assert analyse(source, select=["WH014"]) == []


def test_subscripted_array_annotations_with_a_rank(analyse: Analyse) -> None:
    # Warp 1.19 spells a 2-D array `wp.array[float, Literal[2]]`
    good = """
from typing import Literal

import warp as wp


@wp.kernel
def k(a: wp.array[float, Literal[2]], b: wp.array[float, Literal[2]]):
    t = wp.tile_load(a, shape=(16, 16))
    wp.tile_store(b, t)
"""
    assert analyse(good, select=["WH014"]) == []
    assert warp_error(good) is None
    bad = good.replace("shape=(16, 16)", "shape=16")
    record = _only(analyse(bad, select=["WH014"]))  # the store of the same tile is not reported again
    assert (record.expected, record.actual) == (2, 1)
    error = warp_error(bad)
    assert error is not None and "same number of dimensions as the tile shape" in error
    bad_store = good.replace("b: wp.array[float, Literal[2]]", "b: wp.array[float, Literal[1]]")
    record = _only(analyse(bad_store, select=["WH014"]))
    assert (record.expected, record.actual) == (1, 2)
    error = warp_error(bad_store)
    assert error is not None and "tile_store() 'a' argument must have the same number of dimensions" in error
