"""`closure_bindings`: the values a factory kernel reads from its factory's parameters, taken from the
factory's calls in the file (collected once per module and kept while the syntax tree lives)."""

from __future__ import annotations

import ast
import gc
import weakref

from warp_harness.builtins import load_table
from warp_harness.model import tiles
from warp_harness.model.constants import Value
from warp_harness.model.module import ModuleModel, build_model
from warp_harness.model.tiles import closure_bindings

FACTORIES = """
import warp as wp


def make_copy(block: int = 8):
    @wp.kernel
    def copy(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
        t = wp.tile_load(a, shape=(block, block))
        wp.tile_store(b, t)

    return copy


def make_scale(width: int = 4, height: int = 2):
    @wp.kernel
    def scale(a: wp.array2d(dtype=float)):
        t = wp.tile_load(a, shape=(width, height))
        wp.tile_store(a, t)

    return scale


class Solver:
    def __init__(self, size: int = {size}):
        self.copy = make_copy(size)
        self.scale = tools.make_scale(height=3)


def build(n=12):
    inner = make_copy(n)
    return make_copy(block=2), inner
"""


def _model(size: int) -> ModuleModel:
    return build_model(FACTORIES.format(size=size), "k.py", load_table())


def _bindings(model: ModuleModel) -> dict[str, dict[str, Value]]:
    return {k.name: closure_bindings(model, k, {}) for k in model.kernels if k.is_kernel}


def test_a_factory_kernel_reads_the_largest_value_its_calls_pass() -> None:
    # copy: 2 (keyword), 12 (`build`'s default for `n`) and Solver's default 16; scale: its default width
    # and the largest height passed (3, through an attribute call)
    assert _bindings(_model(16)) == {"copy": {"block": 16}, "scale": {"width": 4, "height": 3}}


def test_the_calls_are_collected_once_per_tree_and_follow_a_changed_source() -> None:
    first = _model(16)
    assert _bindings(first) == _bindings(first)
    assert first.source.tree in tiles._CALLS
    # an edit is a new tree: its own calls, not the old tree's
    changed = _model(10)
    assert _bindings(changed)["copy"] == {"block": 12}
    # without the collected calls (as on the first question), the same answers
    tiles._CALLS.pop(changed.source.tree)
    assert _bindings(changed)["copy"] == {"block": 12}


def test_the_collected_calls_do_not_keep_the_tree_alive() -> None:
    tree = ast.parse(FACTORIES.format(size=4))
    assert tiles._calls_by_name(tree)["make_copy"]
    alive = weakref.ref(tree)
    del tree
    gc.collect()
    assert alive() is None
