"""WH062: launch arguments named like other parameters of the same type (NVIDIA/warp#1143)."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.record import Severity

KERNEL = """
import numpy as np
import warp as wp


@wp.kernel
def sgd_step(g: wp.array(dtype=float), lr: float, weight_decay: float, momentum: float, damping: float,
             params: wp.array(dtype=float)):
    i = wp.tid()
    gt = g[i] + weight_decay * params[i]
    params[i] = params[i] - lr * gt * (1.0 + momentum) * (1.0 - damping)


@wp.kernel
def blend(a: wp.array(dtype=float), b: wp.array(dtype=float), w: float, out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a[i] * w + b[i] * (1.0 - w)

"""

BAD = (
    KERNEL
    + """
def run():
    lr, momentum, dampening, weight_decay = 0.1, 0.9, 0.5, 0.01
    params = wp.array(np.array([1.0, -2.0], dtype=np.float32), dtype=float, device="cpu")
    g = wp.array(np.array([0.5, 0.5], dtype=np.float32), dtype=float, device="cpu")
    kernel_inputs = [g, lr, momentum, dampening, weight_decay, params]
    wp.launch(sgd_step, dim=len(params), inputs=kernel_inputs, device="cpu")
    return params.numpy()
"""
)

GOOD = (
    KERNEL
    + """
def run():
    lr, momentum, dampening, weight_decay = 0.1, 0.9, 0.5, 0.01
    params = wp.array(np.array([1.0, -2.0], dtype=np.float32), dtype=float, device="cpu")
    g = wp.array(np.array([0.5, 0.5], dtype=np.float32), dtype=float, device="cpu")
    kernel_inputs = [g, lr, weight_decay, momentum, dampening, params]
    wp.launch(sgd_step, dim=len(params), inputs=kernel_inputs, device="cpu")
    a = wp.array(np.array([1.0, 2.0], dtype=np.float32), dtype=float, device="cpu")
    b = wp.zeros(2, dtype=float, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    # operands of one kind swapped, and two buffers swapped (a ping-pong step): neither is reported
    wp.launch(blend, dim=2, inputs=[b, a, 0.25], outputs=[out], device="cpu")
    wp.launch(blend, dim=2, inputs=[a, out, 0.5], outputs=[b], device="cpu")
    return params.numpy()
"""
)


def expected() -> np.ndarray:
    p = np.array([1.0, -2.0])
    return p - 0.1 * (0.5 + 0.01 * p) * 1.9 * 0.5


def test_two_misplaced_names_are_a_warning(analyse: Analyse) -> None:
    (record,) = analyse(BAD, select=["WH062"])
    assert record.severity is Severity.WARNING
    assert "`momentum` goes to `weight_decay`" in record.message
    assert "`weight_decay` goes to `damping`" in record.message
    assert record.related[0].location.line == 7


def test_parameter_order_and_operand_swaps_are_fine(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH062"]) == []
    assert warp_error(GOOD) is None


@pytest.mark.slow
def test_warp_runs_the_misplaced_order_wrongly() -> None:
    assert warp_error(BAD) is None
    assert not np.allclose(run_source(BAD), expected(), atol=1e-4)
    assert np.allclose(run_source(GOOD), expected(), atol=1e-5)
