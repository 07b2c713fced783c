"""`ci` option combinations that would be silently ignored are refused with the reason (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_base_without_changed_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("x = 1\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "ci", str(tmp_path), "--base", "HEAD~1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--base REF needs --changed-files" in done.stderr
