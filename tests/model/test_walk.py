"""`walk` visits what ``ast.walk`` visits, in the same order, less the context and operator singletons."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

import warp_harness.model.index
from warp_harness.model.index import NodeIndex
from warp_harness.model.walk import preorder, walk, walk_all

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


def test_preorder_is_the_index_order() -> None:
    for tree in (ast.parse(SOURCE), ast.parse(inspect.getsource(warp_harness.model.index))):
        found, pruned = preorder(tree.body)
        expected = NodeIndex(tree.body).nodes
        assert not pruned
        assert len(found) == len(expected)
        assert all(a is b for a, b in zip(found, expected, strict=True))


def test_preorder_skips_kinds_with_what_is_below_them() -> None:
    tree = ast.parse(SOURCE)
    found, pruned = preorder(tree.body, {ast.Lambda, ast.MatchAs})
    assert pruned
    skipped = {
        id(n) for root in ast.walk(tree) if isinstance(root, ast.Lambda | ast.MatchAs) for n in walk(root)
    }
    assert skipped
    assert not [n for n in found if id(n) in skipped]
    assert len(found) == len(preorder(tree.body)[0]) - len(skipped)
    # what is around them stays: the lambda's statement, the pattern around the skipped capture
    assert any(isinstance(n, ast.Expr) and isinstance(n.value, ast.Lambda) for n in found)
    assert any(isinstance(n, ast.MatchOr) for n in found)
    assert not preorder(tree.body, {ast.ClassDef})[1]


def test_preorder_keeps_the_statements_of_blocks_it_is_told_to() -> None:
    tree = ast.parse(
        "if a:\n    b = 1\n    c = f(2)\nelse:\n    d = g(3)\ntry:\n    h()\nexcept E:\n    i()\n"
    )
    found, _ = preorder(tree.body, keep=lambda node: not isinstance(node, ast.Assign) or node.lineno == 3)
    names = [n.id for n in found if isinstance(n, ast.Name)]
    # `b = 1` (line 2) and `d = g(3)` are left out with their expressions; the roots are never filtered
    assert names == ["a", "c", "f", "h", "E", "i"]
    found, _ = preorder(tree.body[1:], keep=lambda node: False)
    assert [type(n) for n in found] == [ast.Try]
