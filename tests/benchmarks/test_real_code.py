"""Zero false alarms on real code: every error and warning `check` reports on pinned newton, mujoco-warp
and warp-lang trees has a verdict and Warp's evidence in benchmarks/real_code_triage.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "real_code.py"


@pytest.mark.slow
def test_every_finding_on_the_pinned_real_trees_is_triaged_and_none_is_a_false_alarm() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--no-resolution", "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FALSE ALARM" not in done.stdout and "NEW " not in done.stdout and "STALE " not in done.stdout
