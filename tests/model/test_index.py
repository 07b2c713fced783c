from __future__ import annotations

import ast
from importlib.util import find_spec
from pathlib import Path

from warp_harness.model.index import NodeIndex, body_index

_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _warp_sources() -> list[Path]:
    spec = find_spec("warp")
    assert spec is not None and spec.origin is not None
    return sorted((Path(spec.origin).parent / "examples").rglob("*.py"))


def test_index_holds_exactly_the_nodes_ast_walk_finds_in_source_order() -> None:
    for path in _warp_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        index = NodeIndex([tree])
        expected = [n for n in ast.walk(tree) if not isinstance(n, _LEAVES)]
        assert {id(n) for n in index.nodes} == {id(n) for n in expected}, path
        assert len(index.nodes) == len(expected), path
        statements = [n for n in index.nodes if isinstance(n, ast.stmt)]
        assert [(s.lineno, s.col_offset) for s in statements if not isinstance(s, ast.FunctionDef)] == sorted(
            (s.lineno, s.col_offset) for s in statements if not isinstance(s, ast.FunctionDef)
        ), path
        assert index.of(ast.Call) == [n for n in index.nodes if type(n) is ast.Call]


def test_body_index_excludes_decorators_and_annotations() -> None:
    tree = ast.parse(
        "@wp.kernel(enable_backward=False)\ndef k(x: wp.array(dtype=float)):\n    y = wp.sin(x[0])\n"
    )
    function = tree.body[0]
    calls = [ast.unparse(c) for c in body_index(function).of(ast.Call)]
    assert calls == ["wp.sin(x[0])"]
    assert body_index(function) is body_index(function)
