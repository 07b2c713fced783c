"""WHD064 (persisting-l2) is about the workspace's carve-out, not the context's own limit.

A fresh CUDA context on an H200 (driver 580) already reports a persisting-L2 limit of
11,796,480 bytes, with Warp or torch alike; before the baseline, the first job of every fresh
worker reported it as the workspace's. Only a GPU shows it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from daemon_helpers import EXAMPLES, FAST, by_rule, rules_of

from warp_harness.daemon import findings as F
from warp_harness.daemon.integrity import persisting_l2_bytes
from warp_harness.daemon.supervisor import Supervisor


def test_a_cpu_device_has_no_persisting_l2() -> None:
    import warp as wp

    assert persisting_l2_bytes(wp.get_device("cpu"), reset=True) is None


@pytest.mark.gpu
def test_an_honest_module_in_a_fresh_worker_sets_nothing_aside(tmp_path: Path) -> None:  # pragma: no cover
    import warp as wp

    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    shutil.copy(EXAMPLES / "saxpy.py", tmp_path / "saxpy.py")
    with Supervisor(tmp_path, FAST.merged({"devices": ["cuda:0"], "seed": 7})) as sup:
        first = sup.check(tmp_path / "saxpy.py").to_dict()
    assert not by_rule(first, F.PERSISTING_L2), rules_of(first)
    assert first["kernels"]["saxpy"]["bench"]["cuda:0"]["median_s"] > 0
