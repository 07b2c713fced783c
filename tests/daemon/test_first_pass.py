"""The daemon's first pass (daemon/first_pass.py): at start it checks every kernel module of the
workspace once, so `warp-harness results` lists them before anything is saved.

Real parts only: `python -m warp_harness daemon` as a process, `warp-harness results --json` as a
second process finding it through the private runtime folder, watchdog events from files written
in the workspace, and (trusted) its worker compiling and running kernels with Warp on the CPU.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES, REPO, wait_ready

from warp_harness.daemon import protocol as P

BUGGY = REPO / "examples" / "buggy"
NO_KERNEL = "def helper(x):\n    return x + 1\n"


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:  # only what this test started, by pid
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def start_daemon(procs: list[subprocess.Popen[str]], ws: Path, *flags: str) -> subprocess.Popen[str]:
    """The daemon on its default socket (the one `results` finds), ready to answer."""
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "warp_harness", "daemon", str(ws), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd="/",
        start_new_session=True,
    )
    procs.append(proc)
    wait_ready(proc, P.socket_path_for(ws.resolve()))
    return proc


def stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM, then its log (stderr)."""
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def results(ws: Path) -> list[dict[str, Any]]:
    out = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "results", str(ws), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode in (0, 1), out.stderr  # 1: a result has errors
    parsed: list[dict[str, Any]] = json.loads(out.stdout)
    return parsed


def results_when(ws: Path, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        listed = results(ws)
        if len(listed) >= count or time.monotonic() > deadline:
            return listed
        time.sleep(0.1)


@pytest.fixture
def untrusted_ws(tmp_path: Path) -> Path:
    """Two kernel modules, a module without kernels, one in an ignored folder, one excluded."""
    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "pyproject.toml").write_text('[tool.warp-harness]\nexclude = ["generated"]\n')
    shutil.copy(BUGGY / "mixed_precision.py", ws / "kernels" / "mixed_precision.py")
    shutil.copy(BUGGY / "race.py", ws / "race.py")
    (ws / "helpers.py").write_text(NO_KERNEL)
    for folder in (".venv", "generated"):
        (ws / folder).mkdir()
        shutil.copy(BUGGY / "mixed_precision.py", ws / folder / "copy.py")
    return ws


def test_results_lists_the_kernel_modules_before_any_save(
    untrusted_ws: Path, procs: list[subprocess.Popen[str]]
) -> None:
    daemon = start_daemon(procs, untrusted_ws, "--no-trust")
    listed = results_when(untrusted_ws, 2)
    assert sorted(r["path"] for r in listed) == ["kernels/mixed_precision.py", "race.py"]
    by_path = {r["path"]: r for r in listed}
    # untrusted: the static tier only, said as such
    assert {r["status"] for r in listed} == {"untrusted"}
    rules = [x["rule"] for x in by_path["kernels/mixed_precision.py"]["records"]]
    assert rules.count("WH003") == 2 and "WH004" in rules
    log = stop(daemon)
    assert "first pass: 2 kernel module(s) checked" in log, log


def test_no_first_pass_lists_only_what_is_saved(
    untrusted_ws: Path, procs: list[subprocess.Popen[str]]
) -> None:
    daemon = start_daemon(procs, untrusted_ws, "--no-trust", "--no-first-pass")
    race = untrusted_ws / "race.py"
    race.write_text(race.read_text() + "\n# saved\n")
    listed = results_when(untrusted_ws, 1)
    time.sleep(0.5)  # the other module would be listed by now if the pass had run (it takes ~0.1 s)
    assert [r["path"] for r in results(untrusted_ws)] == ["race.py"], listed
    assert "first pass" not in stop(daemon)


PYPROJECT_TRUSTED = """
[tool.warp-harness.runtime]
launch_timeout_s = 3
"""


@pytest.mark.slow
def test_trusted_first_pass_runs_both_tiers_and_is_answered_from_the_cache_next_time(
    tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(PYPROJECT_TRUSTED)
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    daemon = start_daemon(procs, ws, "--trust", "--no-bench")
    (first,) = results_when(ws, 1, timeout=300)
    assert first["path"] == "saxpy.py" and first["cached"] is False
    assert first["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, first["records"]
    stop(daemon)
    daemon = start_daemon(procs, ws, "--trust", "--no-bench")
    (again,) = results_when(ws, 1, timeout=300)
    assert again["cached"] is True and again["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}
    assert "first pass: 1 kernel module(s) checked" in stop(daemon)


@pytest.mark.slow
def test_a_save_jumps_the_first_pass(tmp_path: Path, procs: list[subprocess.Popen[str]]) -> None:
    """The pass goes a_hang, b_saxpy, z_scale; z_scale saved while a_hang runs (a launch that never
    ends, killed after 3 s) is checked next, before b_saxpy. Had the pass queued every module at
    once, the save would have joined z_scale's job at the end of the queue."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(PYPROJECT_TRUSTED)
    shutil.copy(EXAMPLES / "hang.py", ws / "a_hang.py")
    shutil.copy(EXAMPLES / "saxpy.py", ws / "b_saxpy.py")
    shutil.copy(EXAMPLES / "scale.py", ws / "z_scale.py")
    daemon = start_daemon(procs, ws, "--trust", "--no-bench")
    with P.Client(P.socket_path_for(ws.resolve()), timeout=300) as client:
        deadline = time.monotonic() + 60
        # the pass holds one job at a time: a_hang alone in the queue, the others not yet queued
        while (queued := client.request("status")["queued"]) != ["a_hang.py"]:
            assert not queued and time.monotonic() < deadline, queued
            time.sleep(0.02)
        z = ws / "z_scale.py"
        z.write_text(z.read_text() + "\n# saved\n")
        order = [client.wait_push("result")["path"] for _ in range(3)]
    assert order == ["a_hang.py", "z_scale.py", "b_saxpy.py"]
    stop(daemon)
