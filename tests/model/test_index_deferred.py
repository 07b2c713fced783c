from __future__ import annotations

import ast
from importlib.util import find_spec
from pathlib import Path

import pytest

from warp_harness.model.index import _STATEMENT_KINDS, NodeIndex, statement_buckets

_SOURCE = """
import os
from warp import kernel as k

class A:
    import math
    def method(self):
        global G
        try:
            from json import dumps
        except ImportError:
            def fallback(): pass
        else:
            x = 1
        finally:
            y = 2
        match self:
            case 1:
                import re
            case _:
                async def later():
                    async with x:
                        import sys
        while True:
            for i in range(3):
                if i:
                    class B: pass
                else:
                    def g(): return lambda: 0
            else:
                break

@k
def kern(a):
    with a:
        import abc
"""


def _warp_sources() -> list[Path]:
    spec = find_spec("warp")
    assert spec is not None and spec.origin is not None
    return sorted((Path(spec.origin).parent / "examples").rglob("*.py"))[:40]


def _statement_lists(index: NodeIndex) -> dict[type[ast.AST], list[int]]:
    return {kind: [id(n) for n in index.of(kind)] for kind in _STATEMENT_KINDS if index.of(kind)}


def test_statement_buckets_are_the_full_index_s_statements_in_source_order() -> None:
    for tree in [ast.parse(_SOURCE), *(ast.parse(p.read_text(encoding="utf-8")) for p in _warp_sources())]:
        buckets = statement_buckets(tree.body)
        full = _statement_lists(NodeIndex([tree]))
        assert {kind: [id(n) for n in nodes] for kind, nodes in buckets.items()} == full


def test_deferred_index_answers_statements_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = ast.parse(_SOURCE)
    walked: list[list[ast.AST]] = []
    collect = NodeIndex._collect

    def counting(self: NodeIndex, roots: list[ast.AST]) -> None:
        walked.append(list(roots))
        collect(self, roots)

    monkeypatch.setattr(NodeIndex, "_collect", counting)
    index = NodeIndex.deferred(tree)
    assert [n.name for n in index.of(ast.FunctionDef)] == ["method", "fallback", "g", "kern"]
    assert len(index.of(ast.Import)) == 5 and len(index.of(ast.Return)) == 1 and not index.of(ast.Delete)
    assert walked == []
    # anything else walks the module, once, and then answers as the eager index does
    calls = index.of(ast.Call)
    assert [ast.unparse(c) for c in calls] == ["range(3)"]
    assert any(roots == [tree] for roots in walked)
    eager = NodeIndex([ast.parse(_SOURCE)])
    assert [type(n) for n in index.nodes] == [type(n) for n in eager.nodes]
    count = len(walked)
    index.of(ast.Name)
    assert len(walked) == count
