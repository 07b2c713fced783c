"""WH060: an array element given as an output of svd3/svd2/qr3/eig3 (NVIDIA/warp#1735)."""

from __future__ import annotations

import numpy as np
import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error
from warp_run import run_source

from warp_harness.record import Severity

BAD = """
import numpy as np
import warp as wp


@wp.kernel
def decompose(a: wp.array(dtype=wp.mat33), sigma: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.mat33),
              r: wp.array(dtype=wp.mat33), d: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    u = wp.mat33()
    v = wp.mat33()
    wp.svd3(a[tid], u, sigma[tid], v)
    wp.qr3(a[tid], q[tid], r[tid])
    e = wp.mat33()
    wp.eig3(a[tid], e, d[tid])


def run():
    a = wp.array([wp.mat33(2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 4.0)], dtype=wp.mat33, device="cpu")
    sigma = wp.zeros(1, dtype=wp.vec3, device="cpu")
    q = wp.zeros(1, dtype=wp.mat33, device="cpu")
    r = wp.zeros(1, dtype=wp.mat33, device="cpu")
    d = wp.zeros(1, dtype=wp.vec3, device="cpu")
    wp.launch(decompose, dim=1, inputs=[a, sigma, q, r, d], device="cpu")
    return np.concatenate([np.sort(sigma.numpy()[0]), np.abs(np.diag(r.numpy()[0])), np.sort(d.numpy()[0])])
"""

GOOD = """
import numpy as np
import warp as wp


@wp.kernel
def decompose(a: wp.array(dtype=wp.mat33), sigma: wp.array(dtype=wp.vec3), q: wp.array(dtype=wp.mat33),
              r: wp.array(dtype=wp.mat33), d: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    u = wp.mat33()
    s = wp.vec3()
    v = wp.mat33()
    wp.svd3(a[tid], u, s, v)
    sigma[tid] = s
    qq = wp.mat33()
    rr = wp.mat33()
    wp.qr3(a[tid], qq, rr)
    q[tid] = qq
    r[tid] = rr
    e = wp.mat33()
    dd = wp.vec3()
    wp.eig3(a[tid], e, dd)
    d[tid] = dd
    m = a[tid]
    wp.svd3(m, u, s, v)


def run():
    a = wp.array([wp.mat33(2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 4.0)], dtype=wp.mat33, device="cpu")
    sigma = wp.zeros(1, dtype=wp.vec3, device="cpu")
    q = wp.zeros(1, dtype=wp.mat33, device="cpu")
    r = wp.zeros(1, dtype=wp.mat33, device="cpu")
    d = wp.zeros(1, dtype=wp.vec3, device="cpu")
    wp.launch(decompose, dim=1, inputs=[a, sigma, q, r, d], device="cpu")
    return np.concatenate([np.sort(sigma.numpy()[0]), np.abs(np.diag(r.numpy()[0])), np.sort(d.numpy()[0])])
"""

EXPECTED = [2.0, 3.0, 4.0, 2.0, 3.0, 4.0, 2.0, 3.0, 4.0]


def test_array_elements_as_outputs_are_warnings(analyse: Analyse) -> None:
    records = analyse(BAD, select=["WH060"])
    assert [(r.location.line, r.location.col) for r in records] == [(12, 23), (13, 19), (13, 27), (15, 23)]
    assert all(r.severity is Severity.WARNING for r in records)
    assert "`sigma[tid]`" in records[0].message


def test_locals_as_outputs_and_element_inputs_are_fine(analyse: Analyse) -> None:
    assert analyse(GOOD, select=["WH060"]) == []
    assert warp_error(GOOD) is None


@pytest.mark.slow
def test_warp_drops_the_outputs_and_the_locals_keep_them() -> None:
    assert warp_error(BAD) is None
    assert np.allclose(run_source(BAD), 0.0)  # every output stayed at its zero
    assert np.allclose(run_source(GOOD), EXPECTED, atol=1e-5)
