"""A file's dynamic-tier status is `ok` only when its kernels passed: the worker's `ok` says the job ran
to its end, and `ci`'s JSON and the daemon's summary line used to show it over a crash (SIGSEGV), a hang
or a failed validation ("boundary_bug.py: ok, ... cpu fail")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.daemon.client_cli import summary_line
from warp_harness.daemon.results import file_status
from warp_harness.record import Location, Record, Severity, Stage


def _record(stage: Stage, severity: Severity = Severity.ERROR) -> Record:
    return Record(stage=stage, rule="WHD000", severity=severity, location=Location("k.py", 1, 0), message="m")


def test_an_error_of_a_kernel_replaces_ok() -> None:
    assert file_status("ok", []) == "ok"
    assert file_status("ok", [_record(Stage.PERFORMANCE, Severity.WARNING)]) == "ok"
    assert file_status("ok", [_record(Stage.NUMERIC)]) == "fail"
    assert file_status("ok", [_record(Stage.NUMERIC), _record(Stage.CRASH)]) == "crash"
    assert file_status("ok", [_record(Stage.TIMEOUT)]) == "timeout"
    assert file_status("ok", [_record(Stage.COMPILE)]) == "error"
    assert file_status("import-error", [_record(Stage.CRASH)]) == "import-error"
    assert summary_line({"path": "b.py", "status": file_status("ok", [_record(Stage.NUMERIC)])}).startswith(
        "b.py: fail"
    )


@pytest.mark.slow
def test_ci_json_says_crash_and_fail(tmp_path: Path) -> None:
    for name in ("oob_crash.py", "boundary_bug.py", "saxpy.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-m",
            "warp_harness",
            "ci",
            str(tmp_path),
            "--trust",
            "--output-format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd="/",
    )
    assert done.returncode == 1, done.stderr
    status = {f["path"].rsplit("/", 1)[-1]: f["status"] for f in json.loads(done.stdout)["files"]}
    assert status == {"oob_crash.py": "crash", "boundary_bug.py": "fail", "saxpy.py": "ok"}
