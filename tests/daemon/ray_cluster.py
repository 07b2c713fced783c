"""A real local Ray cluster on the loopback interface, for the executor tests and
benchmarks/bench_ray.py (imported by name: ``from ray_cluster import LocalRayCluster``).

A head that runs nothing (``--num-cpus 0``) and ``workers`` worker nodes of one CPU each, every
process in a temporary folder of its own (``--temp-dir``) and in a process group of its own, so
stopping the cluster kills exactly these processes (never ``ray stop``, which stops every Ray
cluster of the user). Token authentication stays on, with a token of the cluster's own
(RAY_AUTH_TOKEN_PATH), never the user's ~/.ray/auth_token. The nodes' TMPDIR is the cluster's
own folder too (``tmp``: the runners' folders and the node's kernel cache live there).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LocalRayCluster:
    def __init__(self, workers: int = 1) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="wh-ray-"))
        token = self.folder / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        # short: Ray's socket paths live under the temp dir and must fit in sun_path
        self.temp_dir = self.folder / "r"
        # the runners' private folders and the node's kernel cache (daemon/ray_executor.py,
        # under tempfile.gettempdir()) belong to this cluster: no build of an earlier run is a hit
        self.tmp = self.folder / "tmp"
        self.tmp.mkdir(mode=0o700)
        self.env = {
            **os.environ,
            "TMPDIR": str(self.tmp),
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": str(token),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []
        self._start(
            "head",
            ["--head", "--port", str(self.port), "--num-cpus", "0", "--include-dashboard=false"],
        )
        self._wait(lambda resources: True)
        for n in range(workers):
            self.add_worker(n)

    def _start(self, name: str, args: list[str]) -> None:
        log = (self.folder / f"{name}.log").open("wb")
        command = [
            RAY,
            "start",
            "--block",
            "--node-ip-address",
            "127.0.0.1",
            "--temp-dir",
            str(self.temp_dir),
        ]
        process = subprocess.Popen(
            [*command, *args, "--disable-usage-stats"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.processes.append(process)

    def add_worker(self, n: int) -> None:
        before = self.cpus()
        self._start(f"worker{n}", ["--address", self.address, "--num-cpus", "1"])
        self._wait(lambda cpus: cpus >= before + 1)

    def cpus(self) -> int:
        out = subprocess.run(
            [RAY, "status", "--address", self.address],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if out.returncode != 0:
            return -1
        for line in out.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == "CPU" and "/" in parts[0]:
                return int(float(parts[0].split("/")[1]))
        return 0

    def _wait(self, ready: object, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            cpus = self.cpus()
            if cpus >= 0 and callable(ready) and ready(cpus):
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.5)
        self.stop()
        logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in self.folder.glob("*.log"))
        raise RuntimeError(f"the local Ray cluster did not start:\n{logs}")

    def stop(self) -> None:
        for process in reversed(self.processes):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=30)
        self.processes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)
