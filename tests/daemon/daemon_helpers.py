"""Helpers of the daemon tests (imported by name: ``from daemon_helpers import ...``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from warp_harness.daemon import protocol as P
from warp_harness.daemon.options import RuntimeOptions

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "contracts"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


# options that keep the suite fast: short benchmark, quick hang detection
FAST = RuntimeOptions(
    bench_repeats=10, bench_max_time_s=0.05, bench_warmup=1, launch_timeout_s=2.0, timeout_s=120.0
)


def capture(ws: Path, script: str, expect: str) -> None:
    """``warp-harness capture -- python SCRIPT`` in the workspace ``ws`` (a real run of the script
    with the launch recorder); its report must say ``expect`` ("captured 3 launch(es) of 3 kernel(s)")."""
    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "capture", "--", sys.executable, script],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0 and expect in p.stdout, p.stdout + p.stderr


# a workspace's runtime settings for `ci --trust` tests of captured launches: the CPU, short benchmarks
CPU_CI_PYPROJECT = """
[tool.warp-harness.runtime]
devices = ["cpu"]
bench_repeats = 5
bench_max_time_s = 0.05
bench_warmup = 1
"""


def ci_results(ws: Path, *flags: str) -> tuple[int, list[dict[str, Any]]]:
    """``warp-harness ci . --trust --output-format json FLAGS`` in ``ws``: its exit code and records."""
    import json

    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "ci", ".", "--trust", "--output-format", "json", *flags],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.stdout, p.stderr
    return p.returncode, list(json.loads(p.stdout)["results"])


def captured_script(ws: Path, source: str, expect: str, name: str = "kernels.py") -> Path:
    """``ws`` with the script ``name`` (its text ``source``) written and its launches captured."""
    (ws / name).write_text(source, encoding="utf-8")
    capture(ws, name, expect)
    return ws


class CountingCall:
    """A replay's ``Call`` on a supervisor's worker (captured/hook.supervisor_call) that counts its jobs."""

    def __init__(self, sup: Any) -> None:
        from warp_harness.daemon.captured.hook import supervisor_call

        self.inner = supervisor_call(sup)
        self.calls = 0

    def __call__(self, msg: dict[str, Any]) -> Any:
        self.calls += 1
        return self.inner(msg)


def rules_of(result: dict[str, Any]) -> list[str]:
    return [r["rule"] for r in result["records"]]


def by_rule(result: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [r for r in result["records"] if r["rule"] == rule]


def def_line(path: Path, function: str) -> int:
    """1-based line of ``def function`` in ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i + 1 for i, text in enumerate(lines) if text.startswith(f"def {function}("))


def access_span(path: Path, text: str) -> tuple[int, int, int]:
    """(1-based line, col, end col) of the first occurrence of ``text`` in ``path``."""
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        col = line.find(text)
        if col >= 0:
            return i + 1, col, col + len(text)
    raise AssertionError(f"{text!r} not in {path}")


def spawn_daemon(
    ws: Path,
    sock: Path,
    *extra: str,
    trust: bool = True,
    cwd: Path | None = None,
    first_pass: bool = False,
) -> subprocess.Popen[str]:
    """``warp-harness daemon`` on ``sock``; without its first pass unless asked, so that the
    workspace's files are checked only when a test saves or asks (and a new connection's first
    message is the reply to its first request)."""
    cmd = [sys.executable, "-m", "warp_harness", "daemon", str(ws), "--socket", str(sock), *extra]
    if trust:
        cmd.append("--trust")
    if not first_pass:
        cmd.append("--no-first-pass")
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=str(cwd or "/"),
        start_new_session=True,  # signals reach it only when a test sends them
    )


def wait_ready(proc: subprocess.Popen[str], sock: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the daemon exited with {proc.returncode}:\n{err}\n{out}")
        if sock.exists():
            try:
                with P.Client(sock, timeout=5) as c:
                    if c.request("ping")["type"] == "pong":
                        return
            except OSError:
                pass
        time.sleep(0.05)
    raise AssertionError("the daemon did not start accepting connections")


@contextmanager
def driven_ray_cluster(workers: int = 1) -> Iterator[Any]:
    """A real local Ray cluster (``ray_cluster.LocalRayCluster``: a head that runs nothing and
    ``workers`` nodes of one CPU on 127.0.0.1) that this process drives: its token in this process's
    environment while it runs, the environment as it was afterwards."""
    import ray
    from ray_cluster import LocalRayCluster

    local = LocalRayCluster(workers=workers)
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
    os.environ.update({k: local.env[k] for k in saved})  # this process is the driver
    # Ray read its authentication settings when it was imported (at collection): read them again
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    try:
        yield local
    finally:
        if ray.is_initialized():
            ray.shutdown()
        local.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# a kernel module that defines its contract itself (built from its text), ``bench_size`` filled in
TWICE_WITH_CONTRACT = """
import numpy as np
import warp as wp
from warp_harness.contract import Contract

@wp.kernel
def twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    y[wp.tid()] = 2.0 * x[wp.tid()]

contract = Contract(
    kernel=twice,
    reference=lambda x: {{"y": 2.0 * x}},
    inputs=lambda n, rng: {{"x": rng.random(n).astype(np.float32), "y": np.empty(n, np.float32)}},
    outputs=["y"],
    sizes=[1, 64],
    bench_size={bench_size},
)
"""


def timed_reference_cases(
    path: Path, workspace: Path, options: RuntimeOptions, **job: Any
) -> list[dict[str, Any]]:
    """The verdict worker's job run in this process (no kernel is launched there): its timed cases
    (``job``: the message's other fields, ``timed_windows`` say); asserts it found every reference."""
    from warp_harness.daemon import worker

    msg = {
        "kind": "reference",
        "path": str(path),
        "workspace": str(workspace),
        "options": options.to_dict(),
        "timed": True,
        "sample_seed": 1,
        **job,
    }
    out = worker.run_reference_job(msg, lambda **_: None)
    assert out["status"] == "ok" and not out["missing"], out
    return [c for c in out["cases"] if c["timed"]]


def recorded_closure(
    workspace: Path, file_name: str, text: str, module_name: str, make: Any
) -> dict[str, Any]:
    """The closure record the capture takes of the kernel ``make(module)`` returns, ``module`` being
    ``text`` written to ``workspace/file_name`` and imported as ``module_name`` (as the user's own
    command runs the factory under ``capture``)."""
    import importlib.util

    from warp_harness.capture.recorder import closure_record

    path = workspace / file_name
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = closure_record(make(module), file_name, workspace)
    assert record is not None
    return record


@contextmanager
def importable(folder: Path, prefix: str) -> Iterator[str]:
    """A module name of its own (``<prefix>_<n>``: Python keeps an imported module by name, so each test
    gets a fresh one) importable from ``folder`` while entered; the module forgotten after."""
    name = f"{prefix}_{abs(hash(folder)) % 10**8}"
    sys.path.insert(0, str(folder))
    try:
        yield name
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)
