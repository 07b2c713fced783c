"""Nodes under a root collected once, in source order and grouped by type.

Rules ask the same questions of every kernel ("every call", "every subscript"); walking the AST
again for each rule dominated the analysis time, so each body is walked once and the lists kept.
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Sequence
from typing import TypeVar

N = TypeVar("N", bound=ast.AST)

# field types of the ASDL grammar that never hold a node worth indexing: names, literals, and the
# context/operator singletons (Load, Store, Add, ...) that are always reached as `node.ctx`/`node.op`
_NOT_CHILDREN = {
    "identifier",
    "string",
    "constant",
    "int",
    "expr_context",
    "operator",
    "unaryop",
    "boolop",
    "cmpop",
    "type_ignore",
}
_FIELD = re.compile(r"(\w+)([*?]?) (\w+)")


_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = _CHILD_FIELDS[cls] = _read_child_fields(cls)
    return fields


def _read_child_fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """Fields of an AST class that can hold child nodes, read from its ASDL signature (``__doc__``)."""
    doc = cls.__doc__ or ""
    start, end = doc.find("("), doc.rfind(")")
    fields = getattr(cls, "_fields", ())
    if start < 0 or end < start:
        return tuple(fields)
    typed = {name: kind for kind, _, name in _FIELD.findall(doc[start + 1 : end])}
    if set(typed) != set(fields):  # not the signature we expect: keep every field
        return tuple(fields)
    return tuple(f for f in fields if typed[f] not in _NOT_CHILDREN)


class NodeIndex:
    __slots__ = ("_by_type", "nodes")

    def __init__(self, roots: Sequence[ast.AST]) -> None:
        nodes: list[ast.AST] = []
        by_type: dict[type[ast.AST], list[ast.AST]] = {}
        stack = list(reversed(roots))
        append = nodes.append
        pop = stack.pop
        push = stack.append
        while stack:
            node = pop()
            append(node)
            kind: type[ast.AST] = type(node)
            bucket = by_type.get(kind)
            if bucket is None:
                by_type[kind] = [node]
            else:
                bucket.append(node)
            names = _child_fields(kind)
            # push children last-first so they pop in source order
            for name in reversed(names):
                value = getattr(node, name, None)
                if value is None:
                    continue
                if type(value) is list:
                    for child in reversed(value):
                        if isinstance(child, ast.AST):
                            push(child)
                elif isinstance(value, ast.AST):
                    push(value)
        self.nodes: list[ast.AST] = nodes
        self._by_type = by_type

    @classmethod
    def concat(cls, root: ast.AST, parts: Sequence[NodeIndex]) -> NodeIndex:
        """The index of ``root`` whose children are exactly the roots of ``parts``, in order, without a walk
        (a module from its top-level statements: the preorder of the whole is the parts one after another)."""
        index = cls.__new__(cls)
        nodes: list[ast.AST] = [root]
        by_type: dict[type[ast.AST], list[ast.AST]] = {type(root): [root]}
        for part in parts:
            nodes.extend(part.nodes)
            for kind, bucket in part._by_type.items():
                current = by_type.get(kind)
                if current is None:
                    by_type[kind] = list(bucket)
                else:
                    current.extend(bucket)
        index.nodes = nodes
        index._by_type = by_type
        return index

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
