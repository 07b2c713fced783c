"""Nodes under a root collected once, in source order and grouped by type.

Rules ask the same questions of every kernel ("every call", "every subscript"); walking the AST
again for each rule dominated the analysis time, so each body is walked once and the lists kept.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Sequence
from typing import TypeVar

N = TypeVar("N", bound=ast.AST)

# context and operator singletons (Load, Store, Add, ...) carry no position and are always reached
# through their parent's attribute (`node.ctx`, `node.op`): leaving them out shrinks the index a third
_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


class NodeIndex:
    __slots__ = ("_by_type", "nodes")

    def __init__(self, roots: Sequence[ast.AST]) -> None:
        nodes: list[ast.AST] = []
        by_type: dict[type, list[ast.AST]] = {}
        stack = list(reversed(roots))
        append = nodes.append
        while stack:
            node = stack.pop()
            append(node)
            by_type.setdefault(type(node), []).append(node)
            children: list[ast.AST] = []
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    if not isinstance(value, _LEAVES):
                        children.append(value)
                elif isinstance(value, list) and value:
                    children.extend(v for v in value if isinstance(v, ast.AST) and not isinstance(v, _LEAVES))
            stack.extend(reversed(children))
        self.nodes: list[ast.AST] = nodes
        self._by_type = by_type

    def of(self, kind: type[N]) -> list[N]:
        """Every node of exactly this type, in source order (operators and contexts are not indexed)."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]

    def of_any(self, *kinds: type[ast.AST]) -> list[ast.AST]:
        if len(kinds) == 1:
            return self._by_type.get(kinds[0], [])
        wanted = set(kinds)
        return [n for n in self.nodes if type(n) in wanted]


_BODIES: weakref.WeakKeyDictionary[ast.AST, NodeIndex] = weakref.WeakKeyDictionary()


def body_index(node: ast.AST) -> NodeIndex:
    """The index of a function's body (decorators and annotations excluded), or of any node."""
    index = _BODIES.get(node)
    if index is None:
        roots: Sequence[ast.AST] = node.body if isinstance(node, ast.FunctionDef) else [node]
        index = NodeIndex(roots)
        _BODIES[node] = index
    return index
