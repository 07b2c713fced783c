"""Every JSON the daemon's clients print parses with a strict parser: a kernel that leaves its output
unwritten gives a record whose ``actual`` is NaN, which ``results --json`` and ``watch --json`` printed
as the bare literal ``NaN`` (``JSON.parse`` rejects it). Non-finite numbers are written as the strings
``"nan"``, ``"inf"`` and ``"-inf"``, as `check --output-format json` writes them."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.daemon import protocol as P
from warp_harness.daemon.client_cli import _jsonable


def strict_loads(text: str) -> Any:
    def reject(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def test_non_finite_numbers_become_strings() -> None:
    value = {"actual": math.nan, "expected": [math.inf, -math.inf, 1.5], "path": b"k\xff.py"}
    text = json.dumps(_jsonable(value), allow_nan=False)
    assert strict_loads(text) == {"actual": "nan", "expected": ["inf", "-inf", 1.5], "path": "k\\xff.py"}
    with pytest.raises(ValueError, match="NaN"):
        strict_loads(json.dumps({"actual": math.nan}))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
    )


@pytest.mark.slow
def test_results_and_watch_json_of_an_unwritten_output_are_strict(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "warp_harness", "daemon", str(ws), "--trust"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd="/",
        start_new_session=True,
    )
    try:
        sock = P.socket_path_for(ws.resolve())
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the daemon did not come up"
            time.sleep(0.05)
        watch = subprocess.Popen(
            [sys.executable, "-I", "-m", "warp_harness", "watch", str(ws), "--json", "--timeout", "110"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        try:
            time.sleep(1.5)  # subscribed before the save
            shutil.copy(EXAMPLES / "boundary_bug.py", ws / "boundary_bug.py")
            assert watch.stdout is not None
            pushed = None
            for line in watch.stdout:
                message = strict_loads(line)
                if message.get("type") == "result" and message.get("state", "done") == "done":
                    if any(r["rule"] == "WHD020" or r.get("actual") == "nan" for r in message["records"]):
                        pushed = message
                        break
            assert pushed is not None, watch.stderr.read() if watch.stderr else ""
        finally:
            watch.kill()
            watch.communicate(timeout=10)
        listed = _cli("results", str(ws), "--json")
        results = strict_loads(listed.stdout)
        actuals = [r.get("actual") for result in results for r in result["records"]]
        assert "nan" in actuals, listed.stdout
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        proc.communicate(timeout=10)
