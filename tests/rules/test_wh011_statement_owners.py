"""WH011 finds the statement of each thread-indexed access from source positions (no walk of the kernel):
the accesses it judges, in every kind of block, are those a walk of each statement's expressions finds."""

from __future__ import annotations

from pathlib import Path

import pytest
import warp
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.engine import _builtins
from warp_harness.model.module import build_model
from warp_harness.model.types import Array
from warp_harness.rules.wh011_unguarded_write import _Candidate, _candidates, _walked_candidates

BLOCKS = """
import warp as wp

USE_B = False


@wp.kernel
def blocks(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), flag: int):
    i = wp.tid()
    if flag > 1:
        c[0] = 1.0
    elif flag > 0:
        a[i] = 2.0
    else:
        for k in range(flag):
            c[0] = c[i] + float(k)
    if wp.static(USE_B):
        b[i] = 3.0
    if flag < 0: c[1] = 4.0


@wp.kernel
def aligned(a: wp.array(dtype=float), b: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    y = (a[i] * 2.0 +
         b[i])
    out[0] = y


def run(n: int):
    a = wp.zeros(n, dtype=float)
    b = wp.zeros(n, dtype=float)
    c = wp.zeros(n, dtype=float)
    wp.launch(blocks, dim=n + 1, inputs=[a, b, c, 1])
    wp.launch(aligned, dim=n + 1, inputs=[a, b, c])
"""


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_accesses_in_elif_else_and_loop_blocks_are_judged_and_dropped_branches_are_not(
    analyse: Analyse,
) -> None:
    records = analyse(BLOCKS, select=["WH011"])
    assert [(r.location.kernel, r.location.line, r.location.col) for r in records] == [
        ("blocks", _line(BLOCKS, "a[i] = 2.0"), 8),
        ("blocks", _line(BLOCKS, "c[i] + float(k)"), 19),
        # two reads in one column of one statement, on two lines
        ("aligned", _line(BLOCKS, "y = (a[i]"), 9),
        ("aligned", _line(BLOCKS, "b[i])"), 9),
    ]
    assert all("`b`" not in r.message for r in records[:2])  # `b[i]` is in the branch Warp drops
    assert warp_error(BLOCKS) is None


def _order(candidates: list[_Candidate]) -> list[tuple[int, ...]]:
    """The candidates in the order `_unguarded_accesses` gives them (stable sort: line, write, column)."""
    ordered = sorted(candidates, key=lambda c: (c[0].lineno, not c[5], c[1].col_offset))
    return [(id(stmt), id(sub), id(name), position, write) for stmt, sub, _, name, position, write in ordered]


WARP = Path(warp.__file__).parent


@pytest.mark.parametrize("tree", ["examples", "tests"])
def test_the_positional_lookup_finds_what_walking_each_statement_finds(tree: str) -> None:
    """Every kernel of Warp's own examples and tests: the same accesses, in the same order."""
    compared = 0
    for path in sorted((WARP / tree).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "wp.kernel" not in text:
            continue
        model = build_model(text, str(path), builtins=_builtins())
        for kernel in model.kernels:
            if not kernel.is_kernel or not kernel.has_python_body:
                continue
            arrays = {p.name for p in kernel.params if isinstance(p.type, Array)}
            tids = model.types(kernel).tid_vars
            if not arrays or not tids:
                continue
            fast = _candidates(kernel.node, arrays, tids)
            assert _order(fast) == _order(_walked_candidates(kernel.node, arrays, tids)), (path, kernel.name)
            compared += bool(fast)
    assert compared > 100
