"""`int_arith.may_overflow`: the cheap look that lets WH026 skip a kernel, and what it must never skip."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import warp

from warp_harness.engine import _builtins
from warp_harness.model.int_arith import Overflow, may_overflow
from warp_harness.model.kernel import KernelDef
from warp_harness.model.module import ModuleModel, build_model

SOURCE = """
import warp as wp

HASH = wp.constant(73856093)
SMALL = 1000003
SHIFTED = 1 << 24


@wp.kernel
def literal(keys: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    out[i] = (keys[i] * 73856093) % n


@wp.kernel
def named(keys: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    out[i] = (HASH * keys[i]) % n


@wp.kernel
def folded(keys: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    out[i] = (keys[i] * SHIFTED) % n


@wp.kernel
def in_place(keys: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    h = int(2166136)
    for _ in range(keys[i]):
        h *= 16777619
    out[i] = h % n


@wp.kernel
def small(keys: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    out[i] = (keys[i] * SMALL) % n


@wp.kernel
def floats(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] * 1.0e7


@wp.kernel
def shadowed(keys: wp.array(dtype=int), out: wp.array(dtype=int), n: int):
    i = wp.tid()
    SMALL = keys[i]
    out[i] = (keys[i] * SMALL) % n
"""


@pytest.fixture(scope="module")
def model() -> ModuleModel:
    return build_model(SOURCE, "m.py", builtins=_builtins())


def _may_overflow(model: ModuleModel, name: str) -> bool:
    kernel = model.kernel_named(name)
    assert kernel is not None
    return may_overflow(kernel.node, model.constants.values, model.imports)


@pytest.mark.parametrize("name", ["literal", "named", "folded", "in_place"])
def test_a_product_by_a_hashing_constant_is_seen(model: ModuleModel, name: str) -> None:
    assert _may_overflow(model, name)


@pytest.mark.parametrize("name", ["small", "floats", "shadowed"])
def test_small_float_and_unknown_factors_are_not(model: ModuleModel, name: str) -> None:
    assert not _may_overflow(model, name)


def _remainders(model: ModuleModel) -> list[tuple[KernelDef, int]]:
    """Every remainder `Overflow` finds negative in the model's kernels and functions: (kernel, line)."""
    found: list[tuple[KernelDef, int]] = []
    for kernel in model.kernels:
        if not kernel.has_python_body:
            continue
        overflow = Overflow(kernel.node, model.types(kernel), model.constants.values, model.imports)
        for node in ast.walk(kernel.node):
            if isinstance(node, ast.expr) and overflow.negative_remainder(node) is not None:
                found.append((kernel, node.lineno))
    return found


def test_overflow_finds_remainders_only_where_a_product_is_seen(model: ModuleModel) -> None:
    found = _remainders(model)
    assert {kernel.name for kernel, _ in found} == {"literal", "named", "folded", "in_place"}


WARP = Path(warp.__file__).parent


@pytest.mark.parametrize("tree", ["examples", "tests"])
def test_no_kernel_of_warp_with_a_negative_remainder_is_skipped(tree: str) -> None:
    """Over Warp's own examples and tests: a kernel `may_overflow` skips has no remainder `Overflow` calls
    negative (the skip never hides a finding), and the look does skip most kernels."""
    kernels = skipped = 0
    for path in sorted((WARP / tree).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "wp.kernel" not in text and "wp.func" not in text:
            continue
        model = build_model(text, str(path), builtins=_builtins())
        flagged = {id(kernel) for kernel, _ in _remainders(model)}
        for kernel in model.kernels:
            if not kernel.has_python_body:
                continue
            kernels += 1
            if not may_overflow(kernel.node, model.constants.values, model.imports):
                skipped += 1
                assert id(kernel) not in flagged, (path, kernel.name)
    assert kernels > 100 and skipped > kernels * 0.8
