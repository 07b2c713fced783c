"""An array of structs is recorded by name only (the store keeps plain numeric arrays), so its launch is
kept incomplete and not replayed, instead of refused at every replay as an unreadable capture (WHD084):
warp-lang 1.19's own tests/test_lvalue.py launches five such kernels, and benchmarks/bench_capture.py
counted each as a false alarm on unchanged code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from warp_harness.capture.store import CaptureStore, KernelIndex
from warp_harness.daemon.captured.hook import supervisor_call
from warp_harness.daemon.captured.replay import replay_module
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.supervisor import Supervisor

pytestmark = pytest.mark.slow

SOURCE = """import numpy as np
import warp as wp


@wp.struct
class Foo:
    field: wp.uint32


@wp.kernel
def bump(foos: wp.array(dtype=Foo), n: wp.array(dtype=wp.uint32)):
    i = wp.tid()
    foos[i].field += wp.uint32(1)
    n[i] = foos[i].field


if __name__ == "__main__":
    wp.launch(bump, dim=4, inputs=[wp.zeros(4, dtype=Foo), wp.zeros(4, dtype=wp.uint32)])
"""


def test_an_array_of_structs_is_listed_not_refused(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(SOURCE, encoding="utf-8")
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "capture", "--", sys.executable, "k.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    (index,) = [e for e in CaptureStore(tmp_path).indexes() if isinstance(e, KernelIndex)]
    (launch,) = index.launches
    assert launch["incomplete"] == ["`foos`: an array of structs is not recorded"]
    options = RuntimeOptions(launch_timeout_s=30.0, timeout_s=300.0)
    with Supervisor(tmp_path, options, warmup=False) as sup:
        out = replay_module(
            tmp_path, tmp_path / "k.py", "k.py", options, supervisor_call(sup), only_changed=False
        )
    assert out.records == [] and out.launches == 0  # nothing refused, nothing replayed
