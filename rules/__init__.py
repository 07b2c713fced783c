"""The constraint layer: one module per rule, each with its documentation beside its code.

To add a rule: write ``whNNN_<name>.py`` with a module docstring (why it matters, a ``### Bad`` and a
``### Good`` example, both checked by tests/rules/test_documented_examples.py) and a `Rule` subclass that
declares its ``scope`` (`Scope`: one kernel, one kernel or function, one launch site, the module, the other
rules' findings) and the module-wide facts it ``reads`` (`Fact`; read only through `RuleContext`'s accessors,
checked when WARP_HARNESS_CHECK_FACTS=1, as the tests run), and implements the matching ``check_kernel`` /
``check_launch`` / ``check_module`` / ``check_findings`` for one item; the engine owns the loop. Then
register it: one line in ``_RULE_MODULES`` below (tests/rules/test_registry.py fails when a ``wh*.py`` file
is not listed, a listed one is missing, or an id lacks its documentation or its examples).
Analyses several rules share live in the model (``warp_harness.model.tiles``, ``.shared_memory``,
``.uniformity``, ``.refined_types``) or in `queries`; a rule never imports another rule.
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
    "wh016_unused_suppression",
    "wh019_func_call",
    "wh020_launch_dim_float",
    "wh021_launch_array_dtype",
    "wh022_array_index_count",
    "wh023_scalar_param_store",
    "wh024_tid_shadowed",
    "wh025_int_division",
    "wh026_int32_hash_overflow",
    "wh040_annotated_assignment",
    "wh041_vector_product",
    "wh042_host_array_call",
    "wh043_string_parameter",
    "wh044_by_value_component_store",
    "wh045_maybe_unassigned",
    "wh046_atomic_result_stored_back",
    "wh047_launch_tiled_without_tiles",
    "wh048_swapped_arguments",
    "wh050_shared_array_world_index",
    "wh051_dim_from_other_array",
    "wh052_offset_index_past_end",
    "wh053_zero_length_axis_write",
    "wh054_unbounded_range_walk",
    "wh055_per_world_index_on_flat_array",
    "wh056_unused_index_load",
    "wh057_offset_added_twice",
    "wh058_update_shared_across_axis",
    "wh059_tile_offset_extent",
    "wh060_decomposition_output_element",
    "wh061_sentinel_result_as_index",
    "wh062_misplaced_launch_arguments",
]


def rule_modules() -> tuple[str, ...]:
    """The registered rule modules' names (``wh003_mixed_scalar_types``), in registration order."""
    return tuple(_RULE_MODULES)


@cache
def rule_classes() -> tuple[type[Rule], ...]:
    """Every registered rule's class, by id; a registered module that is missing raises."""
    classes: list[type[Rule]] = []
    for module_name in _RULE_MODULES:
        module = importlib.import_module(f"{__name__}.{module_name}")
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


__all__ = ["Rule", "all_rules", "rule_by_id", "rule_classes", "rule_modules"]
