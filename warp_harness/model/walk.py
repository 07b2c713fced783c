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
from collections.abc import Callable, Collection, Sequence

from warp_harness.model.index import _MANY, _ONE, _WALK_FIELDS, _block_fields, _read_walk_fields, _walk_fields

# per node class: its child fields in field order, each with how it holds children
_FIELDS: dict[type[ast.AST], tuple[tuple[str, int], ...]] = {}


def _fields(kind: type[ast.AST]) -> tuple[tuple[str, int], ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = _read_walk_fields(kind)
    return fields


def walk(node: ast.AST) -> list[ast.AST]:
    """``node`` and every node below it, breadth-first in ``ast.walk``'s order, without the context and
    operator singletons. (Breadth-first: its own loop; `preorder` is the depth-first one.)"""
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


# how `preorder` reaches a field holding statements when it filters them (besides index's _ONE, _MANY, _ANY)
_BLOCK = 3
# per node class: `index._walk_fields` (last first) with its fields that hold statements marked _BLOCK
_FILTERED_FIELDS: dict[type[ast.AST], tuple[tuple[str, int], ...]] = {}
_BLOCK_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)
_NOTHING: frozenset[type[ast.AST]] = frozenset()


def _filtered_fields(kind: type[ast.AST]) -> tuple[tuple[str, int], ...]:
    fields = _FILTERED_FIELDS.get(kind)
    if fields is None:
        blocks = _block_fields(kind) if issubclass(kind, _BLOCK_HOLDERS) else ()
        fields = _FILTERED_FIELDS[kind] = tuple(
            (name, _BLOCK if name in blocks else how) for name, how in _walk_fields(kind)
        )
    return fields


def preorder(
    roots: Sequence[ast.AST],
    skip: Collection[type[ast.AST]] = _NOTHING,
    keep: Callable[[ast.AST], bool] | None = None,
) -> tuple[list[ast.AST], bool]:
    """The nodes under ``roots`` in preorder (source order; no context or operator singleton), without the
    nodes whose type is in ``skip`` nor what is below them, and whether there was one. ``keep``: the
    statements (handlers, match cases) of a block that are walked; the others are left out with what is
    below them (the roots are not filtered).

    The one walker of `launches` (launch candidates, a scope's own nodes). `walk` (breadth-first),
    `index.statement_buckets` (statement lists only) and `NodeIndex._collect` (function bodies marked as
    they pass) keep their own copy of this loop: a call per node (a walker taking the differences as
    callbacks) costs about 3x, and `statement_buckets` served by this one cost 1.2x (0.145 against 0.121 s
    over newton's modelled files)."""
    found: list[ast.AST] = []
    append = found.append
    stack: list[ast.AST | None] = [*reversed(roots)]
    pop = stack.pop
    push = stack.append
    push_all = stack.extend
    known = _WALK_FIELDS if keep is None else _FILTERED_FIELDS
    read = _walk_fields if keep is None else _filtered_fields
    pruned = False
    while stack:
        node = pop()
        if node is None:  # an empty slot of a list field (`Dict.keys`)
            continue
        kind = type(node)
        if kind in skip:
            pruned = True
            continue
        append(node)
        fields = known.get(kind)
        if fields is None:
            fields = read(kind)
        for name, how in fields:  # last field first, so that the children pop in field order
            value = getattr(node, name, None)
            if how == _MANY:
                if value:
                    push_all(reversed(value))
            elif how == _ONE:
                if value is not None:
                    push(value)
            elif how == _BLOCK:
                if value:
                    push_all([child for child in reversed(value) if keep(child)])  # type: ignore[misc]
            elif type(value) is list:
                push_all(child for child in reversed(value) if isinstance(child, ast.AST))
            elif isinstance(value, ast.AST):
                push(value)
    return found, pruned


def walk_all(roots: list[ast.stmt] | list[ast.AST]) -> list[ast.AST]:
    """`walk` of each root, one after another (``for s in body: for n in ast.walk(s)``)."""
    found: list[ast.AST] = []
    for root in roots:
        found.extend(walk(root))
    return found


__all__ = ["preorder", "walk", "walk_all"]
