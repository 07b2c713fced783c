"""WH042: host-side array constructors (`wp.zeros_like`, `wp.empty`...) called in kernel code."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.rules.wh042_host_array_call import HOST_ARRAY_FUNCTIONS

SOURCE = """
import warp as wp


@wp.func
def f(v: wp.vec3) -> wp.vec3:
    r = wp.{name}(v)
    return v


@wp.kernel
def k(x: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    x[i] = f(x[i])
"""


@pytest.mark.parametrize("name", sorted(HOST_ARRAY_FUNCTIONS))
def test_each_constructor_is_an_error_and_warp_refuses_it(analyse: Analyse, name: str) -> None:
    source = SOURCE.format(name=name)
    (record,) = analyse(source, select=["WH042"])
    assert f"Could not find function wp.{name}" in record.message
    error = warp_error(source)
    assert error is not None and f"Could not find function wp.{name}" in error


def test_kernel_builtins_of_the_same_family_are_fine(analyse: Analyse) -> None:
    source = """
import warp as wp


@wp.kernel
def k(x: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    scratch = wp.zeros(shape=(4,), dtype=float)
    x[i] = wp.copy(x[i]) + wp.vec3(scratch[0])
"""
    assert analyse(source, select=["WH042"]) == []
    assert warp_error(source) is None
