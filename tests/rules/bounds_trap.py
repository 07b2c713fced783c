"""Run source texts with the real Warp on the CPU in debug mode, where a bounds violation is an assertion that
kills the process: the launch-extent rules' (WH050-WH054) evidence.

One parent process initialises Warp and compiles a throwaway kernel once, then forks a child per source
(a trap kills the process that runs it; the children share the parent's precompiled header); each child
imports its source from a file (Warp reads kernels from files), calls ``run()`` and prints
``RESULT <json>`` of what it returns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_RUNNER = """
import importlib.util, json, os, sys, tempfile
import numpy as np
import warp as wp
wp.config.log_level = wp.LOG_WARNING
wp.config.mode = "debug"
wp.config.kernel_cache_dir = sys.argv[2]
wp.init()

# a first compile in the parent: its forked children inherit Warp's precompiled header (a child's compile
# 0.15 CPU s, where each child built the header anew: about 2 s)
@wp.kernel
def _warm(a: wp.array(dtype=float)):
    a[wp.tid()] = 1.0

wp.launch(_warm, dim=1, inputs=[wp.zeros(1, dtype=float, device="cpu")], device="cpu")
results = []
for n, path in enumerate(json.loads(sys.argv[1])):
    log = tempfile.mktemp(prefix="wh_bounds_")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            spec = importlib.util.spec_from_file_location(f"wh_bounds_case_{n}", path)
            m = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(m)
            got = np.asarray(m.run(), dtype=np.float64)
            print("RESULT " + json.dumps(got.tolist()))
        except BaseException as exc:
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(3)
        sys.stdout.flush()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    with open(log, encoding="utf-8", errors="replace") as f:
        output = f.read()
    os.unlink(log)
    results.append([os.waitstatus_to_exitcode(status), output])
print(json.dumps(results))
"""


@dataclass(frozen=True)
class DebugRun:
    code: int
    output: str

    @property
    def trapped(self) -> bool:
        """Died on Warp's bounds assertion."""
        return self.code != 0 and "Assertion failed" in self.output

    @property
    def result(self) -> object:
        """What ``run()`` returned (None when it did not finish)."""
        line = next((x for x in self.output.splitlines() if x.startswith("RESULT ")), None)
        return json.loads(line.removeprefix("RESULT ")) if line is not None else None


def run_in_debug_mode(tmp_path: Path, sources: list[str]) -> list[DebugRun]:
    """Each source's ``run()`` under Warp's debug mode on the CPU, in order."""
    paths = []
    for n, source in enumerate(sources):
        path = tmp_path / f"wh_bounds_{n}.py"
        path.write_text(source, encoding="utf-8")
        paths.append(str(path))
    runner = tmp_path / "bounds_runner.py"
    runner.write_text(_RUNNER, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(runner), json.dumps(paths), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    return [DebugRun(int(code), str(output)) for code, output in runs]
