"""Issue 12 item 12: a worker that prints without bound must not grow the daemon.

A real trusted daemon checks a module that writes about 300 MB to stdout while it is
imported and then segfaults. The daemon keeps only a bounded tail of the worker's output:
its peak RSS (VmHWM) stays within 100 MB of what it was before, the crash record carries
the end of the output with a note of how much was left out, and the daemon still checks a
good kernel afterwards.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from daemon_helpers import EXAMPLES, by_rule, write
from reliability_helpers import FAST_PYPROJECT, Procs, rss_mb, spawn_daemon, wait_ready

from warp_harness.daemon import findings as F
from warp_harness.daemon import protocol as P

pytestmark = pytest.mark.slow

PRINT_MB = 300

LOUD = f"""
import os
import signal

block = b"x" * (1 << 20)
for _ in range({PRINT_MB}):
    os.write(1, block)
os.write(2, b"\\nLOUD-MODULE-LAST-WORDS\\n")
os.kill(os.getpid(), signal.SIGSEGV)
"""


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM): a spike that was freed again still counts."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_a_module_that_prints_300_mb_then_segfaults(tmp_path: Path, procs: Procs) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text(FAST_PYPROJECT)
    shutil.copy(EXAMPLES / "saxpy.py", ws / "saxpy.py")
    write(ws, "loud.py", LOUD)
    sock = tmp_path / "run" / "d.sock"
    proc = spawn_daemon(ws, sock, "--no-watch")
    procs.append(proc)
    wait_ready(proc, sock)
    with P.Client(sock, timeout=120) as c:
        warm = c.request("check", path="saxpy.py")  # worker started, static tier and saxpy warm
        assert warm["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, warm["records"]
        before_peak, before_rss = peak_rss_mb(proc.pid), rss_mb(proc.pid)
        r = c.request("check", path="loud.py", force=True)
        after_peak, after_rss = peak_rss_mb(proc.pid), rss_mb(proc.pid)
        print(
            f"daemon RSS {before_rss:.0f} -> {after_rss:.0f} MB, "
            f"peak {before_peak:.0f} -> {after_peak:.0f} MB"
        )
        assert after_peak - before_peak < 100, (before_peak, after_peak)
        (crash,) = by_rule(r, F.CRASH)
        assert "SIGSEGV" in crash["message"]
        assert "LOUD-MODULE-LAST-WORDS" in crash["hint"]  # the end of the output is kept
        assert "bytes omitted" in crash["hint"]  # and says that the rest was left out
        assert len(crash["hint"]) < 4000
        again = c.request("check", path="saxpy.py", force=True)  # still serving, new worker
        assert again["kernels"]["saxpy"]["validate"] == {"cpu": "pass"}, again["records"]
    assert proc.poll() is None
