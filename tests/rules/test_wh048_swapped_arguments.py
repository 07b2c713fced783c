"""WH048: two arguments of a @wp.func call named like each other's parameters."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.fixes import apply_fixes

SOURCE = """
import numpy as np
import warp as wp


@wp.func
def frame_axis(xmat_in: wp.array(dtype=wp.mat33), ximat_in: wp.array(dtype=wp.mat33), objid: int) -> float:
    return xmat_in[objid][0, 0] + 10.0 * ximat_in[objid][0, 0]


@wp.func
def minus(a: float, b: float) -> float:
    return a - b


@wp.func
def clip(face1: int, face2: int) -> int:
    return face1 - face2


@wp.kernel
def sensor(
    xmat_in: wp.array(dtype=wp.mat33), ximat_in: wp.array(dtype=wp.mat33), out: wp.array(dtype=float)
):
    i = wp.tid()
    face1 = i
    face2 = 2 * i
    a = float(i)
    b = 2.0
    out[i] = frame_axis(ximat_in, xmat_in, i) + minus(b, a) + float(clip(face2, face1))


def run():
    xmat = wp.array(np.tile(np.eye(3, dtype=np.float32), (1, 1, 1)), dtype=wp.mat33, device="cpu")
    ximat = wp.array(np.tile(2.0 * np.eye(3, dtype=np.float32), (1, 1, 1)), dtype=wp.mat33, device="cpu")
    out = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(sensor, dim=1, inputs=[xmat, ximat, out], device="cpu")
    return out.numpy()
"""


def test_a_swapped_pair_is_a_warning_and_operand_pairs_are_not(analyse: Analyse) -> None:
    (record,) = analyse(SOURCE, select=["WH048"])
    assert "`ximat_in` and `xmat_in` are passed to `frame_axis` in each other's places" in record.message
    fixed, applied = apply_fixes(SOURCE, [record], safe_only=False)
    assert applied == 1 and "frame_axis(xmat_in, ximat_in, i)" in fixed
    assert analyse(fixed, select=["WH048"]) == []


@pytest.mark.slow
def test_warp_computes_with_the_swapped_data(analyse: Analyse) -> None:
    assert warp_error(SOURCE) is None
    fixed, _ = apply_fixes(SOURCE, analyse(SOURCE, select=["WH048"]), safe_only=False)
    assert np.allclose(run_source(SOURCE), [2.0 + 10.0 * 1.0 + 2.0])
    assert np.allclose(run_source(fixed), [1.0 + 10.0 * 2.0 + 2.0])


def test_a_callee_also_called_in_order_is_left_alone(analyse: Analyse) -> None:
    source = SOURCE.replace(
        "out[i] = frame_axis(ximat_in, xmat_in, i)",
        "out[i] = frame_axis(xmat_in, ximat_in, i) - frame_axis(ximat_in, xmat_in, i)",
    )
    assert analyse(source, select=["WH048"]) == []
