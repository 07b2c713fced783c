"""Judgements about one kernel that hold for every file launching it, made once per process.

A kernel of module A launched from files B, C and D is judged again by the launch-side pass of each of
them (`Rule.foreign_launches`), and by A's own check; what a rule works out from the kernel alone (its
module's model, the kernel, the arguments in the key) is the same every time. `judged` keeps it per
`ModuleModel` object: the workspace model keeps one model per module text (`ProjectIndex.model`, keyed on
the module's digest, and the model a check built, `ProjectIndex.keep`), so every file of a run that
reaches the kernel shares one entry, a module whose text changes gets a new model and fresh entries, and
a model dropped from the workspace model's cache drops its entries (they are held through a weak
reference to the model). Values may hold the model's syntax nodes, never the model itself.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from warp_harness.model.kernel import KernelDef
    from warp_harness.model.module import ModuleModel

_T = TypeVar("_T")

# id(model) -> (a weak reference to the model, (id(kernel node), key) -> (kernel node, value))
_BY_MODEL: dict[int, tuple[weakref.ref[ModuleModel], dict[tuple[int, Hashable], tuple[object, object]]]] = {}


def judged(model: ModuleModel, kernel: KernelDef, key: Hashable, compute: Callable[[], _T]) -> _T:
    """``compute()`` for ``kernel`` (a kernel of ``model``), made once while ``model`` lives. ``key``
    names the judgement and every argument it depends on besides the model and the kernel (it starts with
    the rule's id)."""
    entries = _entries(model)
    node = kernel.node
    slot = (id(node), key)
    found = entries.get(slot)
    if found is not None and found[0] is node:
        return found[1]  # type: ignore[return-value]
    value = compute()
    entries[slot] = (node, value)
    return value


def _entries(model: ModuleModel) -> dict[tuple[int, Hashable], tuple[object, object]]:
    ident = id(model)
    found = _BY_MODEL.get(ident)
    if found is not None and found[0]() is model:
        return found[1]
    entries: dict[tuple[int, Hashable], tuple[object, object]] = {}
    _BY_MODEL[ident] = (weakref.ref(model, lambda ref: _forget(ident, ref)), entries)
    return entries


def _forget(ident: int, ref: weakref.ref[ModuleModel]) -> None:
    found = _BY_MODEL.get(ident)
    if found is not None and found[0] is ref:
        del _BY_MODEL[ident]


def clear() -> None:
    """Forget every judgement (each is made again when next asked)."""
    _BY_MODEL.clear()


def held() -> int:
    """How many models have judgements kept (tests: entries go with their model)."""
    return len(_BY_MODEL)


__all__ = ["clear", "held", "judged"]
