"""The constraint layer: one module per rule, each with its documentation beside its code.

To add a rule: write ``whNNN_<name>.py`` with a module docstring (why it matters, a bad and a
good example) and a `Rule` subclass, then list the class in ``_RULE_MODULES`` below.
"""

from __future__ import annotations

import importlib
from functools import cache

from warp_harness.rules.base import Rule

_RULE_MODULES = [
    "wh000_syntax_error",
    "wh001_missing_annotation",
    "wh002_unsupported_construct",
    "wh003_mixed_scalar_types",
    "wh004_builtin_call",
    "wh005_kernel_return_value",
    "wh006_launch_arguments",
    "wh007_tid_rank",
    "wh008_block_dim",
    "wh009_tile_matmul_shape",
    "wh010_nonatomic_update",
    "wh011_unguarded_write",
    "wh012_uncoalesced_access",
    "wh013_fp64_arithmetic",
    "wh014_tile_array_rank",
    "wh015_tile_shared_memory",
]


@cache
def rule_classes() -> tuple[type[Rule], ...]:
    classes: list[type[Rule]] = []
    for module_name in _RULE_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{module_name}":
                continue  # not written yet
            raise
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value is not Rule
                and value.__module__ == module.__name__
            ):
                classes.append(value)
    return tuple(sorted(classes, key=lambda c: c.id))


@cache
def all_rules() -> tuple[Rule, ...]:
    return tuple(cls() for cls in rule_classes())


def rule_by_id(rule_id: str) -> type[Rule] | None:
    wanted = rule_id.strip().upper()
    for cls in rule_classes():
        if cls.id == wanted or cls.name == rule_id.strip().lower():
            return cls
    return None


__all__ = ["Rule", "all_rules", "rule_by_id", "rule_classes"]
