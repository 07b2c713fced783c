"""``ast.walk`` at a fraction of its cost, as a list.

``ast.walk`` spends most of its time in ``iter_child_nodes``/``iter_fields`` (two generators and an
``isinstance`` per field per node); on newton that was a quarter of ``check``'s analysis time. `walk`
reads each node class's child fields once (from its ASDL signature, as `NodeIndex` does) and visits in
the same breadth-first order as ``ast.walk``, so a caller that keeps the first match finds the same node.

The one difference: the context and operator singletons (``Load``, ``Store``, ``Add``, ...) are not
visited. They hold no nodes; ask for ``node.ctx`` / ``node.op`` instead.
"""

from __future__ import annotations

import ast

from warp_harness.model.index import _MANY, _ONE, _read_walk_fields

# per node class: its child fields in field order, each with how it holds children
_FIELDS: dict[type[ast.AST], tuple[tuple[str, int], ...]] = {}


def _fields(kind: type[ast.AST]) -> tuple[tuple[str, int], ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = _read_walk_fields(kind)
    return fields


def walk(node: ast.AST) -> list[ast.AST]:
    """``node`` and every node below it, breadth-first in ``ast.walk``'s order, without the context and
    operator singletons."""
    found: list[ast.AST] = [node]
    append = found.append
    extend = found.extend
    known = _FIELDS
    position = 0
    while position < len(found):
        current = found[position]
        position += 1
        kind = type(current)
        fields = known.get(kind)
        if fields is None:
            fields = _fields(kind)
        for name, how in fields:
            value = getattr(current, name, None)
            if how == _ONE:
                if value is not None:
                    append(value)
            elif how == _MANY:
                if value:
                    if None in value:  # `Dict.keys` holds None for a ``**mapping``
                        extend(child for child in value if child is not None)
                    else:
                        extend(value)
            elif type(value) is list:
                extend(child for child in value if isinstance(child, ast.AST))
            elif isinstance(value, ast.AST):
                append(value)
    return found


def walk_all(roots: list[ast.stmt] | list[ast.AST]) -> list[ast.AST]:
    """`walk` of each root, one after another (``for s in body: for n in ast.walk(s)``)."""
    found: list[ast.AST] = []
    for root in roots:
        found.extend(walk(root))
    return found


__all__ = ["walk", "walk_all"]
