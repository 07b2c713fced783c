from __future__ import annotations

import ast
from importlib.util import find_spec
from pathlib import Path

from warp_harness.model.index import NodeIndex, body_index, child_nodes

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


def _preorder(roots: list[ast.AST]) -> list[ast.AST]:
    """A reference walk: preorder by `ast.iter_child_nodes`, contexts and operators left out."""
    found: list[ast.AST] = []
    for root in roots:
        if isinstance(root, _LEAVES):
            continue
        found.append(root)
        found.extend(_preorder(list(ast.iter_child_nodes(root))))
    return found


NESTED = """
@wp.kernel
def k(x: wp.array(dtype=float), n: int = len([1, 2])):
    @wp.func
    def inner(y: float) -> float:
        return {1: y, **d}[1]

    x[0] = inner(x[0]) if n else 0.0


class C:
    def method(self, a=lambda: 1):
        return a
"""


def test_function_bodies_are_spliced_into_the_walk_in_source_order() -> None:
    for text in [NESTED, *(p.read_text(encoding="utf-8") for p in _warp_sources()[:20])]:
        tree = ast.parse(text)
        index = NodeIndex([tree])
        assert index.nodes == _preorder([tree])
        for function in index.of(ast.FunctionDef):
            # built while walking the module, shared with the rules
            assert body_index(function).nodes == _preorder(list(function.body))
        assert NodeIndex.concat(tree, [NodeIndex([s]) for s in tree.body]).nodes == index.nodes


def test_child_nodes_are_iter_child_nodes_without_contexts_and_operators() -> None:
    tree = ast.parse(NESTED)
    for node in ast.walk(tree):
        expected = [c for c in ast.iter_child_nodes(node) if not isinstance(c, _LEAVES)]
        assert child_nodes(node) == expected


def test_a_compiled_view_leaves_out_hidden_subtrees_and_the_module_index_keeps_them() -> None:
    from warp_harness.model.index import full_body_index, hidden_nodes, set_compiled

    tree = ast.parse(
        "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    if wp.static(False):\n        x[0] = wp.sin(x[0])\n    else:\n        x[0] = wp.cos(x[0])\n"
    )
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    static_if = function.body[0]
    assert isinstance(static_if, ast.If)
    whole = [ast.unparse(c) for c in body_index(function).of(ast.Call)]
    try:
        set_compiled(function, frozenset({id(static_if.body[0])}))
        assert [ast.unparse(c) for c in body_index(function).of(ast.Call)] == [
            "wp.static(False)",
            "wp.cos(x[0])",
        ]
        assert static_if.body[0] not in body_index(function).nodes and static_if in body_index(function).nodes
        assert hidden_nodes(function) == {id(static_if.body[0])}
        # what the rules see changes; the whole body and the module's index do not
        assert [ast.unparse(c) for c in full_body_index(function).of(ast.Call)] == whole
        assert "wp.sin(x[0])" in [ast.unparse(c) for c in NodeIndex([tree]).of(ast.Call)]
        view = body_index(function)
        set_compiled(function, frozenset({id(static_if.body[0])}))
        assert body_index(function) is view  # the same hidden nodes: the view is kept
    finally:
        set_compiled(function, None)
    assert [ast.unparse(c) for c in body_index(function).of(ast.Call)] == whole
    assert hidden_nodes(function) == frozenset()


def test_lazy_and_rerooted_indexes_are_the_index_they_stand_for() -> None:
    """`NodeIndex.lazy` (built on first use) and `rerooted` (the same statements under another module
    node, as the keystroke path of the incremental analysis makes them) against a walk of the tree."""
    for path in _warp_sources()[::7]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        built: list[int] = []

        def build(tree: ast.Module = tree, built: list[int] = built) -> NodeIndex:
            built.append(1)
            return NodeIndex.concat(tree, [NodeIndex([stmt]) for stmt in tree.body])

        lazy = NodeIndex.lazy(build)
        assert built == []
        whole = NodeIndex([tree])
        assert lazy.of(ast.Call) == whole.of(ast.Call) and lazy.nodes == whole.nodes
        assert lazy.of_any(ast.Name, ast.Call) == whole.of_any(ast.Name, ast.Call)
        assert built == [1]
        # a lazy index is a part like any other
        assert NodeIndex.concat(
            tree, [NodeIndex.lazy(lambda s=s: NodeIndex([s])) for s in tree.body]
        ).nodes == (whole.nodes)
        other = ast.Module(body=tree.body, type_ignores=[])
        moved = whole.rerooted(other)
        expected = NodeIndex([other])
        assert moved.of(ast.Module) == [other]
        assert moved.of(ast.Call) == expected.of(ast.Call)
        assert moved.nodes == expected.nodes
        assert moved.of_any(ast.Module, ast.FunctionDef) == expected.of_any(ast.Module, ast.FunctionDef)
        assert whole.of(ast.Module) == [tree]  # the index it came from is unchanged
