"""`warp-harness calibrate`: a measured hardware profile that load_profile() and the rules accept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.daemon import calibrate as C
from warp_harness.hardware import HardwareProfile, load_profile

REPO = Path(__file__).resolve().parents[2]
FAST = ["--repeats", "3", "--max-time", "0.05", "--seed", "1"]


def _fake_h200() -> C.Calibration:
    cal = C.Calibration(
        device="cuda:0",
        device_name="NVIDIA H200",
        arch=90,
        sm_count=132,
        shared_memory_per_block_optin=232448,
        properties={"sharedMemPerBlock": 49152, "multiProcessorCount": 132, "regsPerMultiprocessor": 65536},
        template=C._template_name(90),
        date="2026-12-02 14:31 UTC",
    )
    cal.measurements += [
        C.Measurement("copy", 5.15e-4, 5.1e-4, 5.2e-4, 20, 4166.3, "GB/s"),
        C.Measurement("tile_gemm", 4.8e-3, 4.7e-3, 4.9e-3, 10, 28.5, "TFLOP/s"),
        C.Measurement("torch_gemm_float32", 2.1e-2, 2.1e-2, 2.2e-2, 10, 51.0, "TFLOP/s"),
        C.Measurement("torch_gemm_float16", 1.4e-3, 1.4e-3, 1.5e-3, 10, 761.0, "TFLOP/s"),
    ]
    return cal


def test_a_cuda_calibration_makes_a_complete_profile(tmp_path: Path) -> None:
    cal = _fake_h200()
    assert cal.template == "sm_90"
    path = C.write_profile(cal, tmp_path / "h200.toml")
    prof = load_profile(str(path))
    assert prof.name == "calibrated-sm_90" and prof.device == "cuda" and prof.arch == 90 and prof.is_cuda
    assert prof.sm_count == 132
    assert prof.shared_memory_per_block == 49152 and prof.shared_memory_limit == 232448
    assert prof.peak_bandwidth_gbs == 4166.3
    assert prof.peak_fp32_tflops == 51.0  # the best float32 rate measured
    assert prof.peak_fp16_tflops == 761.0
    assert prof.peak_fp64_tflops == load_profile("sm_90").peak_fp64_tflops  # not measured: template
    assert "copy 4166 GB/s" in prof.source
    given = C.profile_fields(cal)
    assert {f.name for f in fields(HardwareProfile)} <= set(given)


def test_an_unknown_arch_takes_the_nearest_profile() -> None:
    assert C._template_name(None) == "cpu"
    assert C._template_name(89) == "sm_89"
    assert C._template_name(100) == "sm_100"  # Blackwell datacenter, bundled
    assert C._template_name(103) == "sm_100" and C._template_name(93) == "sm_90"


@pytest.mark.slow
def test_calibrate_on_the_cpu_and_check_against_it(tmp_path: Path) -> None:
    out = tmp_path / "cpu.toml"
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness.daemon", "calibrate", "--device", "cpu", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "copy" in p.stdout and "tile_gemm" in p.stdout
    prof = load_profile(str(out))
    assert prof.device == "cpu" and prof.peak_bandwidth_gbs > 0 and prof.peak_fp32_tflops > 0
    # the static rules take it as a --target
    from warp_harness.cli import main

    assert main(["check", "--target", str(out), str(REPO / "examples" / "saxpy.py")]) == 0


@pytest.mark.slow
def test_calibrate_announces_each_measurement() -> None:
    said: list[dict[str, Any]] = []
    cal = C.calibrate("cpu", gemm=False, reference=True, on_progress=said.append)
    labels = [m["label"] for m in said]
    assert labels[0] == "calibrate cpu: starting Warp" and "calibrate cpu: copy bandwidth" in labels
    assert "calibrate cpu: reference GEMM float32" in labels
    assert {m.name for m in cal.measurements} >= {"copy"}


def test_the_fastest_window_counts_and_windows_are_spaced() -> None:
    # a device in a slow spell for the first two windows: the peak is the third window's
    medians = iter([1.05, 1.06, 1.00, 1.04])
    slept: list[float] = []

    def measure() -> list[float]:
        m = next(medians)
        return [m * 0.999, m, m * 1.001]

    times = C.best_window(measure, 4, 0.1, sleep=slept.append)
    assert times == [pytest.approx(0.999), 1.00, pytest.approx(1.001)]
    assert slept == [0.1, 0.1, 0.1]
    assert C.best_window(lambda: [2.0], 1, 0.1, sleep=slept.append) == [2.0] and len(slept) == 3


def test_calibrate_rejects_a_bad_device() -> None:
    from warp_harness.daemon.cli import main

    assert main(["calibrate", "--device", "tpu"]) == 2


@pytest.mark.gpu
def test_calibrate_cuda() -> None:  # pragma: no cover - needs a GPU
    import warp as wp

    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    cal = C.calibrate("cuda:0", gemm=False, reference=False)
    assert cal.arch and cal.sm_count > 0 and cal.get("copy") is not None
    assert cal.shared_memory_per_block_optin >= 49152


@pytest.mark.slow
def test_contracts_found_from_a_checkout_that_is_also_the_workspace(tmp_path: Path) -> None:
    """warp_harness imported straight from a checkout on PYTHONPATH that is also the workspace (how the
    GPU machine runs it): the checkout's `warp_harness/` finds `rules/`, `server/` and `daemon/` beside
    it, and the harness's own modules are not taken for workspace code (which would re-import them and
    give the example a second Contract class)."""
    repo = tmp_path / "repo"
    for sub in ("warp_harness", "daemon", "rules", "server"):
        shutil.copytree(REPO / sub, repo / sub, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "pyproject.toml").write_text("[tool.warp-harness]\n")
    (repo / "examples").mkdir()
    shutil.copy(EXAMPLES / "saxpy.py", repo / "examples" / "saxpy.py")
    env = dict(os.environ, PYTHONPATH=str(repo))
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness.daemon", "bench", "examples/saxpy.py", "--trust", *FAST],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "examples/saxpy.py::saxpy" in p.stdout and "1 timed" in p.stderr
