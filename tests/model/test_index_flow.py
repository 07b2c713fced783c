"""Index flow: which indices of a kernel are loaded from memory, and with what evidence of sharing."""

from __future__ import annotations

import ast

import pytest

from warp_harness.engine import _builtins
from warp_harness.model.index_flow import IndexFlow, Origin
from warp_harness.model.module import build_model
from warp_harness.model.uniformity import Uniformity

SOURCE = """
import warp as wp


@wp.func
def bin_of(v: float, h: float) -> int:
    return int(v / h)


@wp.kernel
def k(
    values: wp.array(dtype=int),
    x: wp.array(dtype=float),
    edges: wp.array2d(dtype=int),
    pairs: wp.array(dtype=wp.vec2i),
    offsets: wp.array(dtype=int),
    keys: wp.array(dtype=int),
    count: wp.array(dtype=int),
    scale: float,
):
    i = wp.tid()
    b = values[i]
    scaled = int(x[i] * scale)
    floored = wp.floor(x[i] / scale)
    vertex = edges[i, 1]
    pair = pairs[i]
    first = pair[0]
    second = pair.y
    column = edges[i][0]
    stride = vertex * 3 + 2
    own = offsets[b] + i
    start = offsets[i]
    world = keys[i] // 4
    helper = bin_of(x[i], scale)
    slot = wp.atomic_add(count, 0, 1)
    twice = values[i]
    twice = i
    plain = i * 2 + 1
    cell = scaled * 8 + floored
    offset_column = start + vertex
    flat = values[i * 2 + 1]
    flat0 = values[2 * i]
    strided = values[i * scaled + 1]
    for n in range(start, offsets[i + 1]):
        segment = start + n
        neighbour = values[n]
"""

EXPECTED = {
    "b": Origin.GATHERED,
    "scaled": Origin.BINNED,
    "floored": Origin.BINNED,
    "vertex": Origin.CONNECTIVITY,
    "pair": Origin.GATHERED,
    "first": Origin.CONNECTIVITY,
    "second": Origin.CONNECTIVITY,
    "column": Origin.CONNECTIVITY,
    "stride": Origin.CONNECTIVITY,  # vertex * 3 + c keeps the vertex's standing
    "own": Origin.NONE,  # a loaded offset plus the thread index: the thread's own element
    "start": Origin.GATHERED,
    "world": Origin.GATHERED,  # integer decoding of a key is not a binning
    "helper": Origin.GATHERED,  # a helper that bins is seen only through its arguments
    "slot": Origin.NONE,  # an atomic hands every thread its own slot
    "twice": Origin.NONE,  # assigned twice: the weakest of its values
    "plain": Origin.NONE,
    "cell": Origin.BINNED,  # binned coordinates combined
    "offset_column": Origin.GATHERED,  # the weaker of two loaded values
    "flat": Origin.CONNECTIVITY,  # a flattened connectivity row: spring_indices[i * 2 + 1]
    "flat0": Origin.CONNECTIVITY,
    "strided": Origin.GATHERED,  # a stride loaded from memory says nothing
    "n": Origin.NONE,  # a loop counter
    "segment": Origin.NONE,
    "neighbour": Origin.GATHERED,
}


@pytest.fixture(scope="module")
def flow() -> IndexFlow:
    model = build_model(SOURCE, "m.py", builtins=_builtins())
    kernel = model.kernel_named("k")
    assert kernel is not None
    types = model.types(kernel)
    return IndexFlow(kernel, types, Uniformity(model, kernel, types))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_local_gets_the_origin_its_values_show(flow: IndexFlow, name: str) -> None:
    assert flow.origin(ast.Name(name, ast.Load())) is EXPECTED[name]


def test_thread_indices_and_loop_counters_are_the_threads_own(flow: IndexFlow) -> None:
    def own(text: str) -> bool:
        return flow.own(ast.parse(text, mode="eval").body)

    assert own("i") and own("plain") and own("own")
    assert not own("b") and not own("vertex") and not own("0")


def test_expressions_asked_one_after_another_each_get_their_own_origin(flow: IndexFlow) -> None:
    """Origins of compound expressions are remembered by node: a node built, asked and dropped must not
    answer for the next one (which may reuse its memory)."""
    cases = [
        ("values[i] + 0", Origin.GATHERED),
        ("scaled * 8 + 1", Origin.BINNED),
        ("i * 2 + 1", Origin.NONE),
    ]
    for _ in range(50):
        for text, expected in cases:
            assert flow.origin(ast.parse(text, mode="eval").body) is expected, text


def test_deeply_nested_arithmetic_keeps_the_origin_of_its_operands(flow: IndexFlow) -> None:
    # each level asks for its operands' origins twice (`own`, then `origin`)
    binned = ast.parse(" + ".join(["scaled"] * 40), mode="eval").body
    own = ast.parse(" + ".join(["plain"] * 40), mode="eval").body
    assert flow.origin(binned) is Origin.BINNED
    assert flow.origin(own) is Origin.NONE and flow.own(own)
