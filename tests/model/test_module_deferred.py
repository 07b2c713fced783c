"""`build_model` walks a module's every node only when something asks for one that is no statement: a file
without kernels and launches never does, and what the rules report is what the eager model gave."""

from __future__ import annotations

import ast

import pytest

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.engine import analyse_parsed
from warp_harness.model.index import NodeIndex
from warp_harness.model.module import build_model
from warp_harness.model.source import parse_source

_NO_KERNELS = """
import warp as wp

def helper(n):
    import math
    return [wp.vec3(0.0, 0.0, float(i)) for i in range(n)]

class Holder:
    def make(self):
        return wp.zeros(3, dtype=float)
"""

_KERNELS_AND_LAUNCHES = """
import warp as wp
from warp import launch as go

N = wp.constant(4)

@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    if wp.static(N > 3):
        a[i] = a[i] * s
    else:
        a[i] = a[i] * 2.0

@wp.kernel
def fill(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 1.0

def factory(block):
    @wp.kernel
    def inner(a: wp.array(dtype=float)):
        a[wp.tid()] = float(block)
    return inner

class Runner:
    def run(self, n):
        a = wp.zeros(n, dtype=float)
        wp.launch(scale, dim=(n, 2), inputs=[a, 2.0])
        go(fill, dim=n, inputs=[a])
        try:
            wp.launch_tiled(
                scale,
                dim=n,
                inputs=[a, 1],
                block_dim=64,
            )
        except RuntimeError:
            pass

@wp.kernel
def unused(x: wp.array(dtype=wp.float64)):
    x[0] = x[0] + 1.0
"""


def _walks_of_module(monkeypatch: pytest.MonkeyPatch) -> list[ast.AST]:
    walked: list[ast.AST] = []
    collect = NodeIndex._collect

    def counting(self: NodeIndex, roots: list[ast.AST]) -> None:
        walked.extend(root for root in roots if isinstance(root, ast.Module))
        collect(self, roots)

    monkeypatch.setattr(NodeIndex, "_collect", counting)
    return walked


def test_a_file_without_kernels_and_launches_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked = _walks_of_module(monkeypatch)
    model = build_model(_NO_KERNELS)
    assert not model.kernels and not model.launches
    assert "math" in model.imports.modules and [f.name for f in model.index.of(ast.FunctionDef)] == [
        "helper",
        "make",
    ]
    assert walked == []
    # asked for, the index is the eager one
    expected = [ast.unparse(c) for c in NodeIndex([ast.parse(_NO_KERNELS)]).of(ast.Call)]
    walked.clear()
    assert [ast.unparse(c) for c in model.index.of(ast.Call)] == expected
    assert walked == [model.tree]


def test_the_launch_search_walks_only_the_statements_that_name_a_launch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walked = _walks_of_module(monkeypatch)
    model = build_model(_KERNELS_AND_LAUNCHES)
    assert [k.name for k in model.kernels] == ["scale", "fill", "inner", "unused"]
    assert [(s.node.lineno, s.kernel_name, s.tiled) for s in model.launches] == [
        (29, "scale", False),
        (30, "fill", False),
        (32, "scale", True),
    ]
    assert walked == []
    eager = parse_source(_KERNELS_AND_LAUNCHES)
    eager_model = build_model(eager.text, parsed=eager, index=NodeIndex([eager.tree]))
    assert [(s.node.lineno, s.node.col_offset) for s in eager_model.launches] == [
        (s.node.lineno, s.node.col_offset) for s in model.launches
    ]


@pytest.mark.parametrize("text", [_KERNELS_AND_LAUNCHES, _NO_KERNELS])
def test_records_are_those_of_the_eagerly_indexed_model(text: str) -> None:
    table = load_table()
    settings = Settings()
    lazy = parse_source(text)
    eager = parse_source(text)
    found = analyse_parsed(lazy, "m.py", settings, table).records
    expected = analyse_parsed(
        eager, "m.py", settings, table, build_model(eager.text, "m.py", table, eager, NodeIndex([eager.tree]))
    ).records
    assert found == expected
    if text is _KERNELS_AND_LAUNCHES:
        assert found  # the file is one the rules report on
