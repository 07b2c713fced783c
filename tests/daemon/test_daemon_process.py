"""`warp-harness daemon` as a real subprocess: socket, watchdog push, signals, single instance.

Everything here is real: ``python -m warp_harness daemon`` (the installed entry point's
module), its Unix socket, watchdog events from a file written in the workspace, its worker
subprocess compiling with Warp on the CPU, and SIGTERM/SIGINT sent to the process.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, spawn_daemon, wait_ready

from warp_harness.daemon import protocol as P

pytestmark = pytest.mark.slow

PYPROJECT = """
[tool.warp-harness.runtime]
bench_repeats = 10
bench_max_time_s = 0.05
bench_warmup = 1
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().split()[2] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(PYPROJECT)
    yield ws


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for p in started:  # only what this test started, by pid
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def test_daemon_process_pushes_a_save_refuses_a_second_and_stops_on_sigterm(
    ws: Path, tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    sock = tmp_path / "run" / "d.sock"
    daemon = spawn_daemon(ws, sock)
    procs.append(daemon)
    wait_ready(daemon, sock)
    state_file = ws / ".warp-harness" / "daemon.json"
    state = json.loads(state_file.read_text())
    assert state["pid"] == daemon.pid and state["socket"] == str(sock) and state["trusted"] is True

    with P.Client(sock, timeout=120) as c:
        welcome = c.request("hello", client="test")
        assert welcome["trusted"] is True and welcome["workspace"] == str(ws.resolve())
        # a save in the workspace (written in place): watchdog -> worker -> pushed result
        text = (ws / "saxpy.py").read_text()
        (ws / "saxpy.py").write_text(text + "\n# saved\n")
        pushed = c.wait_push("result", timeout=120, where={"path": "saxpy.py"})
        assert pushed["push"] is True and pushed["cached"] is False
        assert pushed["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, pushed["records"]
        worker_pid = c.request("status")["worker"]["worker_pid"]
        assert isinstance(worker_pid, int) and _alive(worker_pid)

    # a second daemon for the same workspace refuses, on the same socket or another one
    for other in (sock, tmp_path / "run" / "other.sock"):
        second = spawn_daemon(ws, other)
        procs.append(second)
        _out, err = second.communicate(timeout=60)
        assert second.returncode == 1, err
        assert f"already serves {ws.resolve()}" in err and f"pid {daemon.pid}" in err, err
        assert not other.exists() or other == sock
    assert state_file.is_file() and json.loads(state_file.read_text())["pid"] == daemon.pid
    with P.Client(sock, timeout=10) as c:  # the first one is unharmed
        assert c.request("ping")["type"] == "pong"

    daemon.send_signal(signal.SIGTERM)
    _out, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, err
    assert "stopping (SIGTERM)" in err
    assert not sock.exists() and not state_file.exists()
    assert not _alive(worker_pid)


def test_sigint_stops_the_daemon_while_a_kernel_hangs(
    ws: Path, tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    """Ctrl-C in the middle of a job: the hanging worker is killed, not waited for."""
    shutil.copy(EXAMPLES / "hang.py", ws / "hang.py")
    sock = tmp_path / "run" / "d.sock"
    daemon = spawn_daemon(ws, sock, "--launch-timeout", "120", "--timeout", "300")
    procs.append(daemon)
    wait_ready(daemon, sock)
    with P.Client(sock, timeout=120) as c:
        c.request("hello", client="test")
        assert c.request("check", path="hang.py", wait=False)["type"] == "queued"
        c.wait_push("progress", timeout=120, where={"stage": "validate", "kernel": "spin"})
        time.sleep(0.3)  # inside the launch now
        worker_pid = c.request("status")["worker"]["worker_pid"]
        assert isinstance(worker_pid, int) and _alive(worker_pid)
        t0 = time.monotonic()
        daemon.send_signal(signal.SIGINT)
        _out, err = daemon.communicate(timeout=60)
    assert daemon.returncode == 0, err
    assert time.monotonic() - t0 < 20, "the stop waited for the hanging launch"
    assert "stopping (SIGINT)" in err and "Traceback" not in err, err
    assert not sock.exists() and not (ws / ".warp-harness" / "daemon.json").exists()
    assert not _alive(worker_pid)


def test_verbose_daemon_logs_one_line_per_job(
    ws: Path, tmp_path: Path, procs: list[subprocess.Popen[str]]
) -> None:
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    sock = tmp_path / "run" / "d.sock"
    daemon = spawn_daemon(ws, sock, "--verbose")
    procs.append(daemon)
    wait_ready(daemon, sock)
    with P.Client(sock, timeout=120) as c:
        c.request("hello", client="test")
        c.request("check", path=str(ws / "saxpy.py"))
    daemon.send_signal(signal.SIGTERM)
    _out, err = daemon.communicate(timeout=60)
    (line,) = [x for x in err.splitlines() if x.startswith("warp-harness daemon: saxpy.py:")]
    assert "saxpy cpu:pass" in line and "0 errors" in line and " ms" in line, line
    assert "worker " in line and "queued " in line, line
