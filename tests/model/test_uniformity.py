"""Thread uniformity: how many threads pass a condition (`Uniformity.reach`)."""

from __future__ import annotations

import ast

import pytest

from warp_harness.engine import _builtins
from warp_harness.model.module import build_model
from warp_harness.model.uniformity import Reach, Uniformity

SOURCE = """
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=float), ids: wp.array(dtype=int), flag: wp.array(dtype=int), n: int, eps: float):
    i = wp.tid()
    d = x[i]
    first = i == 0
    passed = d > eps
"""

# (condition, positive) -> how many threads pass it
CASES = [
    ("n > 4", True, Reach.MANY),  # thread-independent
    ("i < n", True, Reach.MANY),
    ("i >= n", False, Reach.MANY),  # an early `return` for the threads past the end
    ("d > eps", True, Reach.SOME),  # the CFL shape: some threads, maybe many
    ("d > eps", False, Reach.SOME),
    ("d > eps and n > 4", True, Reach.SOME),
    ("passed", True, Reach.SOME),
    ("i == 0", True, Reach.ONE),
    ("i != 0", False, Reach.ONE),
    ("not (i != 0)", True, Reach.ONE),
    ("ids[i] == n", True, Reach.ONE),  # a unique id may match in one thread only
    ("ids[i] == n", False, Reach.SOME),
    ("d > eps and ids[i] == n", True, Reach.ONE),
    ("d > eps or ids[i] == n", True, Reach.SOME),
    ("i >= n - 1", True, Reach.ONE),  # the last thread
    ("wp.atomic_add(flag, 0, 1) < 1", True, Reach.ONE),  # a claim: the first thread wins
    ("first", True, Reach.ONE),
    ("0.0 < d < eps", True, Reach.ONE),  # chained comparisons are not judged
]


@pytest.fixture(scope="module")
def uniformity() -> Uniformity:
    model = build_model(SOURCE, "m.py", builtins=_builtins())
    kernel = model.kernel_named("k")
    assert kernel is not None
    return Uniformity(model, kernel, model.types(kernel))


@pytest.mark.parametrize(("test", "positive", "reach"), CASES, ids=[f"{t}-{p}" for t, p, _ in CASES])
def test_reach_of_a_condition(uniformity: Uniformity, test: str, positive: bool, reach: Reach) -> None:
    assert uniformity.reach(ast.parse(test, mode="eval").body, positive) is reach
