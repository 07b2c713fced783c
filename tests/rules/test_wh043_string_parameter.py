"""WH043: a kernel parameter annotated `str` (every launch fails to pack it)."""

from __future__ import annotations

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

SOURCE = """
import warp as wp


@wp.kernel
def apply_bc(u: wp.array(dtype=float), bc: {annotation}):
    i = wp.tid()
    if i == 0:
        u[i] = 0.0


@wp.func
def named(x: float, label: str) -> float:
    return x


def run():
    u = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(apply_bc, dim=4, inputs=[u, {value}], device="cpu")
"""


def test_a_str_kernel_parameter_is_an_error(analyse: Analyse) -> None:
    (record,) = analyse(SOURCE.format(annotation="str", value='"dirichlet"'), select=["WH043"])
    assert record.location.line == 6
    assert "unable to pack kernel parameter type <class 'str'>" in record.message


@pytest.mark.slow
def test_warp_refuses_the_launch_and_runs_the_int_version() -> None:
    error = warp_error(SOURCE.format(annotation="str", value='"dirichlet"'), launch=True)
    assert error is not None and "unable to pack kernel parameter type <class 'str'>" in error
    assert warp_error(SOURCE.format(annotation="int", value="0"), launch=True) is None


def test_int_parameters_and_str_in_functions_are_fine(analyse: Analyse) -> None:
    assert analyse(SOURCE.format(annotation="int", value="0"), select=["WH043"]) == []
