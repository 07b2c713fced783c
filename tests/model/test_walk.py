"""`walk` visits what ``ast.walk`` visits, in the same order, less the context and operator singletons."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

import warp_harness.model.index
from warp_harness.model.walk import walk, walk_all

_SINGLETONS = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)

SOURCE = textwrap.dedent(
    """
    import warp as wp

    @wp.kernel
    def k(a: wp.array(dtype=float), *, b: int = 1, c, **kw):
        i = wp.tid()
        a[i] = -a[i] + 2.0 * b if not c else {**kw, "x": 1}["x"]
        x = [j for j in range(3) if j > 1 and j < 3]
        match i:
            case {"k": 1, **rest}:
                pass
            case [1, *others] | None:
                pass
        lambda q=1, /, *r, s=None, **t: q
        f"{i!r:>{b}}"
        del x
    """
)


def _reference(node: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(node) if not isinstance(n, _SINGLETONS)]


@pytest.mark.parametrize(
    "tree",
    [ast.parse(SOURCE), ast.parse(inspect.getsource(warp_harness.model.index))],
    ids=["constructs", "a-real-module"],
)
def test_same_nodes_in_the_same_order_as_ast_walk(tree: ast.AST) -> None:
    found = walk(tree)
    expected = _reference(tree)
    assert len(found) == len(expected)
    assert all(a is b for a, b in zip(found, expected, strict=True))


def test_no_singletons_and_no_none() -> None:
    found = walk(ast.parse(SOURCE))
    assert not [n for n in found if n is None or isinstance(n, _SINGLETONS)]
    # what the reference keeps and drops, to show the filter matters on this input
    assert any(isinstance(n, ast.Store) for n in ast.walk(ast.parse(SOURCE)))


def test_walk_all_is_each_root_in_turn() -> None:
    body = ast.parse(SOURCE).body
    assert walk_all(body) == [n for statement in body for n in _reference(statement)]
