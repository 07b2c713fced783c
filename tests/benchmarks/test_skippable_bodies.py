"""benchmarks/skippable_bodies.py: each condition keeps the bodies its consumer reads, and the stubbed text
keeps every other line where it was (the figures in docs/performance.md rest on both)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "skippable_bodies.py"

SOURCE = """\
import warp as wp
import numpy as np

SIZE = 8


@wp.kernel
def scale(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * 2.0


def make_scale(n):
    @wp.kernel
    def k(a: wp.array(dtype=float)):
        a[wp.tid()] = float(n)

    return k


def plain_helper(values):
    total = 0
    for v in values:
        total += v
    return total


def calls_the_factory(n):
    return make_scale(n)


def uses_numpy(n):
    return np.zeros(n)


def uses_size():
    return SIZE + 1


def calls_the_plain_helper():
    return plain_helper([1, 2])


class Solver:
    def __init__(self, n):
        self.n = n

    def count(self):
        result = 0
        for i in range(10):
            result += i
        return result

    def step(self, a):
        wp.launch(scale, dim=self.n, inputs=[a])
"""


@pytest.fixture(scope="module")
def skippable() -> ModuleType:
    spec = importlib.util.spec_from_file_location("skippable_bodies", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _left(skippable: ModuleType) -> dict[str, set[str]]:
    (file,) = skippable.read_files([SOURCE])
    return {name: {b.node.name for bodies in left for b in bodies} for name, left in skippable.rows([file])}


def test_each_condition_keeps_the_bodies_its_consumer_reads(skippable: ModuleType) -> None:
    rows = list(_left(skippable).items())
    names = [name for name, _ in rows]
    left = [found for _, found in rows]
    # decorated kernels are never candidates; the factory, `__init__` (a store) and `step` (a launch) are
    assert left[0] == {
        "make_scale",
        "plain_helper",
        "calls_the_factory",
        "uses_numpy",
        "uses_size",
        "calls_the_plain_helper",
        "__init__",
        "count",
        "step",
    }
    assert "make_scale" not in left[1]  # its nested decorator
    assert "step" not in left[3]  # wp / launch
    assert "__init__" not in left[4] and "count" in left[4]  # self.n = n stores a field
    no_factory_named = names.index("+ no kept top-level function or class named")
    assert "calls_the_factory" in left[no_factory_named - 1]
    assert "calls_the_factory" not in left[no_factory_named]  # tiles reads the factory's calls
    no_module_name = names.index("+ no other module-level name named")
    assert {"uses_numpy", "uses_size"} <= left[no_module_name - 1]
    assert not {"uses_numpy", "uses_size"} & left[no_module_name]
    # `plain_helper` is named by the body of `calls_the_plain_helper`, left out too until the last row,
    # which counts the names in the kept code only: both stay left out
    assert {"plain_helper", "calls_the_plain_helper", "count"} <= left[-1]


def test_a_stubbed_text_keeps_every_other_line_and_position(skippable: ModuleType) -> None:
    (file,) = skippable.read_files([SOURCE])
    left = skippable.rows([file])[-1][1][0]
    stubbed = skippable._stubbed(file, left)
    assert len(stubbed.splitlines()) == len(SOURCE.splitlines())
    whole, cut = ast.parse(SOURCE), ast.parse(stubbed)
    kept = {"scale", "make_scale", "calls_the_factory", "uses_numpy", "uses_size"}
    for before, after in zip(whole.body, cut.body, strict=True):
        assert (type(before), before.lineno, before.col_offset) == (
            type(after),
            after.lineno,
            after.col_offset,
        )
        if getattr(before, "name", None) in kept:
            assert ast.dump(before, include_attributes=True) == ast.dump(after, include_attributes=True)
    helper = next(s for s in cut.body if getattr(s, "name", None) == "plain_helper")
    assert isinstance(helper, ast.FunctionDef) and [type(s) for s in helper.body] == [ast.Pass]
