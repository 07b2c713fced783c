"""`warp-harness status|results|watch|stop` against a real daemon process on its default socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import write

from warp_harness.daemon import protocol as P

MIXED = """
import warp as wp

@wp.kernel
def scale(x: wp.array(dtype=wp.float16)):
    i = wp.tid()
    x[i] = x[i] * 0.5
"""


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd="/",
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-m", "warp_harness", "daemon", str(ws), "--no-trust"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd="/",
        start_new_session=True,
    )
    sock = P.socket_path_for(ws.resolve())
    deadline = time.monotonic() + 60
    while not sock.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the daemon did not come up"
        time.sleep(0.05)
    try:
        yield ws
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        proc.communicate(timeout=10)


def test_without_a_daemon_each_command_says_so_and_exits_1(tmp_path: Path) -> None:
    for command in ("status", "results", "stop"):
        done = cli(command, str(tmp_path))
        assert done.returncode == 1, (command, done.stderr)
        assert "no daemon serves" in done.stderr and "warp-harness daemon" in done.stderr


def test_status_results_watch_and_stop(served: Path) -> None:
    ws = served
    status = cli("status", str(ws))
    assert status.returncode == 0, status.stderr
    assert f"daemon for {ws.resolve()}" in status.stdout and "untrusted" in status.stdout
    as_json = json.loads(cli("status", str(ws), "--json").stdout)
    assert as_json["workspace"] == str(ws.resolve()) and as_json["trusted"] is False

    watch = subprocess.Popen(
        [sys.executable, "-I", "-m", "warp_harness", "watch", str(ws), "--json", "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    try:
        time.sleep(1.5)  # subscribed before the save
        write(ws, "mixed.py", MIXED)
        assert watch.stdout is not None
        pushed = None
        for line in watch.stdout:
            message = json.loads(line)
            if message.get("type") == "result" and message.get("path", "").endswith("mixed.py"):
                pushed = message
                break
        assert pushed is not None, watch.stderr.read() if watch.stderr else ""
        assert "WH003" in [r["rule"] for r in pushed["records"]]
    finally:
        watch.kill()
        watch.communicate(timeout=10)

    results = cli("results", str(ws))
    assert results.returncode == 1, results.stderr  # an error is reported
    assert "mixed.py: untrusted" in results.stdout
    assert "mixed.py:6:12: WH003 [error]" in results.stdout
    listed = json.loads(cli("results", str(ws), "--json").stdout)
    assert [Path(r["path"]).name for r in listed] == ["mixed.py"]
    one = json.loads(cli("results", str(ws), "--json", "--file", str(ws / "mixed.py")).stdout)
    assert len(one) == 1

    stopped = cli("stop", str(ws))
    assert stopped.returncode == 0, stopped.stderr
    assert not P.socket_path_for(ws.resolve()).exists()
    assert cli("status", str(ws)).returncode == 1


def test_watch_prints_readable_lines(served: Path) -> None:
    ws = served
    watch = subprocess.Popen(
        [sys.executable, "-I", "-m", "warp_harness", "watch", str(ws), "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )
    try:
        assert watch.stdout is not None
        assert watch.stdout.readline().startswith(f"watching {ws.resolve()} (untrusted)")
        write(ws, "mixed.py", MIXED)
        seen = []
        for line in watch.stdout:
            seen.append(line)
            if "WH003 [error]" in line:
                break
        text = "".join(seen)
        assert "mixed.py: untrusted" in text and "mixed.py:6:12: WH003 [error]" in text
    finally:
        watch.kill()
        watch.communicate(timeout=10)
