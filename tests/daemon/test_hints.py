"""The hint of a failed validation follows the evidence (daemon/hints.py).

The evidence is built by the validator's own code (``validate.compare`` on the output a
kernel would give, then ``validate.failure_evidence``), so the dicts have exactly the shape
of a real run's. A race cannot be shown on the CPU (Warp runs the threads one after
another), so its evidence is the one a GPU run gives: ``got 2, expected 3`` on integer data,
results that change between identical runs, or a kernel right on the CPU and wrong on cuda.
The end-to-end run of a real out-of-bounds stencil on the CPU is at the end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from warp_harness.contract import Tolerance
from warp_harness.daemon.hints import choose_hint
from warp_harness.daemon.steps import KernelInfo
from warp_harness.daemon.steps import validate as V

TOL = Tolerance(rtol=1e-4, atol=1e-5)


def _outcome(got: np.ndarray, ref: np.ndarray, *, size: int | None = None) -> V.CaseOutcome:
    outcome = V.CaseOutcome("cuda:0", size or got.size, 1234, None)
    outcome.reports.append(V.compare("out", got, ref.astype(np.float64), TOL, poisoned=False))
    outcome.ok = not outcome.bad_reports
    return outcome


def _evidence(got: np.ndarray, ref: np.ndarray, **flags: Any) -> dict[str, Any]:
    return V.failure_evidence(_outcome(got, ref), **flags)


def _hint(outcome: V.CaseOutcome, *, grows: bool, **flags: Any) -> str:
    info = KernelInfo("k", 3, 4, 5, kernel=None)
    evidence = V.failure_evidence(outcome, grows=grows, **flags)
    return V.describe_failure(info, outcome, grows, evidence=evidence)[2]


def test_evidence_has_the_documented_shape() -> None:
    ev = _evidence(np.array([2.0], np.float32), np.array([3.0]), grows=True)
    # the keys daemon/hints.py's docstring lists, nothing else: a JSON-able dict
    assert set(ev) == {
        "rule", "output", "shape", "n_total", "n_bad", "n_unwritten", "n_nonfinite", "max_rel",
        "first_bad", "got", "expected", "boundary", "edge_run", "edge", "integral", "whole_units",
        "grows", "varies", "passes_on",
    }  # fmt: skip
    json.dumps(ev)


def test_integer_sum_off_by_whole_units_is_a_race_not_precision() -> None:
    # the H200 report: a non-atomic `s[0] = s[0] + x[i]` gave 2 where the reference says 3,
    # and a larger size failed worse, so the old rule called it "the error grows with the size"
    outcome = _outcome(np.array([2.0], np.float32), np.array([3.0]))
    ev = V.failure_evidence(outcome, grows=True)
    assert ev["integral"] and ev["whole_units"]
    hint = choose_hint(ev)
    assert hint.kind == "race" and not hint.bounds_suspect
    text = _hint(outcome, grows=True)
    assert "wp.atomic_add" in text and "off by whole units" in text
    assert "precision" not in text and "float64" not in text


def test_the_race_hint_quotes_no_figures_the_shrunk_message_contradicts() -> None:
    # the H100 report (issue 36): the hint quoted the size-1000 case ("got 3, expected 2489")
    # while the message showed the shrunk size-2 case; the evidence is the first case's
    first = _outcome(np.array([3.0], np.float32), np.array([2489.0]), size=1000)
    smallest = _outcome(np.array([1.0], np.float32), np.array([2.0]), size=2)
    info = KernelInfo("k", 3, 4, 5, kernel=None)
    evidence = V.failure_evidence(first, grows=True)
    _, message, hint, expected, actual = V.describe_failure(info, smallest, True, evidence=evidence)
    assert "size 2," in message and "got 1, expected 2" in message, message
    assert "2489" not in hint and "got 3" not in hint and "whole units" in hint, hint
    assert (expected, actual) == (2.0, 1.0)


def test_results_that_change_between_runs_are_a_race() -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal(256)
    got = ref.copy()
    got[17] += 0.5  # float data: whole units say nothing, the re-run does
    text = _hint(_outcome(got.astype(np.float32), ref), grows=True, varies=True)
    assert "different results when run again" in text and "atomic" in text


def test_right_on_the_cpu_and_wrong_on_cuda_is_a_race() -> None:
    ref = np.linspace(1.0, 2.0, 64)
    got = ref.copy()
    got[5] *= 0.5
    hint = choose_hint(_evidence(got.astype(np.float32), ref, passes_on=("cpu",)))
    assert hint.kind == "race" and "right on cpu" in hint.text


@pytest.mark.parametrize("k", [2, 3])
def test_wrong_values_in_the_last_elements_are_a_read_past_the_end(k: int) -> None:
    # a stencil `out[i] = x[i] + x[i + k]`: the last k threads read past the end of x; the
    # first bad index is n - k, not the boundary, and the values are garbage
    rng = np.random.default_rng(1)
    ref = rng.standard_normal(1000)
    got = ref.copy()
    got[-k:] = [7.5e22, -3.0e-38, 4.0][:k]
    ev = _evidence(got.astype(np.float32), ref, grows=True)
    assert ev["first_bad"] == [1000 - k] and not ev["boundary"]
    assert (ev["edge_run"], ev["edge"]) == (k, "end")
    hint = choose_hint(ev)
    assert hint.kind == "bounds" and hint.bounds_suspect
    assert f"x[i + {k}]" in hint.text and "debug mode" in hint.text


def test_wrong_values_in_the_first_elements_are_a_read_before_the_start() -> None:
    ref = np.arange(1.0, 101.0)
    got = ref.copy()
    got[:3] = np.nan
    hint = choose_hint(_evidence(got, ref))
    assert hint.kind == "bounds" and "x[i - 3]" in hint.text and hint.bounds_suspect


def test_nan_in_the_middle_may_be_a_bounds_error_and_is_re_run_in_debug_mode() -> None:
    ref = np.ones(100)
    got = ref.copy()
    got[40] = np.inf
    hint = choose_hint(_evidence(got, ref))
    assert hint.kind == "nonfinite" and hint.bounds_suspect and "outside an array" in hint.text


def test_only_small_growing_errors_are_precision() -> None:
    rng = np.random.default_rng(2)
    ref = rng.uniform(1.0, 2.0, 4096)
    got = ref * (1 + 3e-4 * rng.choice([-1.0, 1.0], ref.size))
    hint = choose_hint(_evidence(got, ref, grows=True))
    assert hint.kind == "precision" and "float64" in hint.text and not hint.bounds_suspect
    # a float32 prefix sum: the rounding error builds up towards the end, a long run there
    # is still precision, not a stencil
    scan = np.cumsum(rng.uniform(0.0, 1.0, 4096))
    drift = scan.copy()
    drift[3000:] *= 1 + 2e-4
    ev = _evidence(drift, scan, grows=True)
    assert ev["edge_run"] == 1096 and choose_hint(ev).kind == "precision"


def test_large_errors_growing_with_size_are_not_called_precision() -> None:
    ref = np.linspace(1.0, 2.0, 500)
    got = ref.copy()
    got[100:400:7] *= 1.7
    hint = choose_hint(_evidence(got, ref, grows=True))
    assert hint.kind == "arithmetic" and "float64" not in hint.text


def test_a_bad_last_element_keeps_the_boundary_hint() -> None:
    ref = np.ones(64)
    got = ref.copy()
    got[-1] = 0.0
    hint = choose_hint(_evidence(got, ref))
    assert hint.kind == "boundary" and hint.bounds_suspect


STENCIL = """
import numpy as np
import warp as wp
from warp_harness.contract import Contract


@wp.kernel
def stencil(x: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = x[i] + x[i + 2]  # BUG: the last two threads read past the end of x


contract = Contract(
    kernel=stencil,
    reference=lambda x: {"out": x + np.roll(x, -2)},
    inputs=lambda n, rng: {"x": rng.standard_normal(n).astype(np.float32), "out": np.empty(n, np.float32)},
    outputs=["out"],
    sizes=[64, 1000],
)
"""


@pytest.mark.slow
def test_out_of_bounds_stencil_on_the_cpu_gets_the_bounds_hint_and_a_debug_re_run(tmp_path: Path) -> None:
    (tmp_path / "stencil.py").write_text(STENCIL)
    p = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "ci", ".", "--trust", "--no-bench", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 1, p.stderr
    results = json.loads(p.stdout)["results"]
    (mismatch,) = [r for r in results if r["rule"] in ("WHD020", "WHD022")]
    # the first bad index at size 64 is 62: not the boundary
    assert "first bad index was 62" in mismatch["message"] or "first bad index 62" in mismatch["message"]
    assert "read past the end" in mismatch["hint"] and "x[i + 2]" in mismatch["hint"]
    assert "grows with the size" not in mismatch["hint"]
    # ... and the debug re-run with the bounds probe placed the access on its line
    bounds = [r for r in results if r["rule"] == "WHD011" and r["severity"] == "error"]
    assert bounds, results
    line = STENCIL.splitlines().index(
        "    out[i] = x[i] + x[i + 2]  # BUG: the last two threads read past the end of x"
    )
    assert bounds[0]["location"]["line"] == line + 1 and "`x[i + 2]`" in bounds[0]["message"]
