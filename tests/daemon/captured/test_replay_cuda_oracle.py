"""The CUDA oracles on a real GPU: a racy kernel's captured launch is flagged on CUDA and not on the
CPU, a correct one is clean. Skipped without a CUDA device (CI has none; the CPU-only behaviour is in
test_replay_shrink_cache.py and test_replay_oracle_units.py).

Races of this kind are bugs Warp users hit: a thread resetting a count other threads still read
(https://github.com/newton-physics/newton/pull/2477), a skip flag shared across worlds
(https://github.com/google-deepmind/mujoco_warp/pull/809), accumulations read back in the launch
that made them (https://github.com/newton-physics/newton/pull/3443).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import FAST, captured_script

from warp_harness.daemon import findings as F
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import replay_module
from warp_harness.daemon.supervisor import Supervisor

pytestmark = [pytest.mark.gpu, pytest.mark.slow]

SOURCE = """import numpy as np
import warp as wp


@wp.kernel
def racy_sum(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    s[0] = s[0] + x[i]  # non-atomic read-modify-write


@wp.kernel
def racy_max(x: wp.array(dtype=float), best: wp.array(dtype=float)):
    i = wp.tid()
    if x[i] > best[0]:  # compare-then-store
        best[0] = x[i]


@wp.kernel
def atomic_sum(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(s, 0, x[i])


if __name__ == "__main__":
    n = 1 << 16
    x = wp.array(np.random.default_rng(1).uniform(0.0, 1.0, n).astype(np.float32), device="cpu")
    for k in (racy_sum, racy_max, atomic_sum):
        wp.launch(k, dim=n, inputs=[x, wp.zeros(1, dtype=float, device="cpu")], device="cpu")
"""


def test_a_racy_launch_is_flagged_on_cuda_and_a_correct_one_is_clean(tmp_path: Path) -> None:
    import warp as wp

    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    captured_script(tmp_path, SOURCE, "captured 3 launch(es)")
    cpu_only = FAST.merged({"devices": ["cpu"]})
    with_cuda = FAST.merged({"devices": ["cpu", "cuda"]})
    with Supervisor(tmp_path, with_cuda, warmup=False) as sup:
        on_cpu = replay_module(
            tmp_path,
            tmp_path / "kernels.py",
            "kernels.py",
            cpu_only,
            supervisor_call(sup),
            only_changed=False,
        )
        on_cuda = replay_module(
            tmp_path,
            tmp_path / "kernels.py",
            "kernels.py",
            with_cuda,
            supervisor_call(sup),
            only_changed=False,
        )
    # the CPU runs threads one after another: every kernel matches its (CPU-captured) baseline
    assert sorted(str(r.location.kernel) for r in on_cpu.records if r.rule == F.REPLAYED) == [
        "atomic_sum",
        "racy_max",
        "racy_sum",
    ], [r.message for r in on_cpu.records]
    races = {str(r.location.kernel): r for r in on_cuda.records if r.rule == F.REPLAY_RACE}
    assert "racy_sum" in races, [r.message for r in on_cuda.records]
    assert "likely race (non-atomic read-modify-write, compare-then-store)" in races["racy_sum"].message
    assert "between the CPU and cuda:0" in races["racy_sum"].message
    assert "kernels.py:" in races["racy_sum"].message  # the launch's provenance
    assert "atomic_sum" not in races
    (clean,) = [r for r in on_cuda.records if r.location.kernel == "atomic_sum"]
    assert clean.rule == F.REPLAYED and "two runs on cuda:0 agree" in clean.message
