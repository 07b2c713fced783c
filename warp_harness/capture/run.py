"""``warp-harness capture -- COMMAND``: run the user's command with the launch recorder, file the result.

The recorder is installed in the child process only: a private folder (0700, made here) holding a
``sitecustomize.py`` goes first on the child's ``PYTHONPATH``, so ``python script.py``,
``python -m pytest ...`` and a bare ``pytest`` (any Python process the command starts, its
subprocesses included) install it at start-up; it wraps ``wp.launch`` once Warp is imported. A
``sitecustomize`` the environment already had is still run after ours. The raw launches go to that
private folder; once the command ends, whatever its exit status, they are filed into the store and
signed (``store.CaptureStore.ingest``), then the store is held to its byte budget.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from warp_harness.capture import recorder
from warp_harness.capture.store import DEFAULT_BUDGET_BYTES, CaptureStore, IngestReport

_SITECUSTOMIZE = '''"""The launch recorder in this process (made by `warp-harness capture`)."""
import importlib.util as _u
import os as _os
import sys as _sys

try:
    from warp_harness.capture.recorder import install_on_import as _install
except Exception as _exc:  # the command still runs, unrecorded
    _sys.stderr.write(f"warp-harness capture: no recorder in this Python ({_exc!r})\\n")
else:
    _install()

# run the sitecustomize the environment had before ours
_here = _os.path.dirname(_os.path.abspath(__file__))
for _entry in _sys.path:
    if _entry and _os.path.abspath(_entry) != _here:
        _candidate = _os.path.join(_entry, "sitecustomize.py")
        if _os.path.isfile(_candidate):
            _spec = _u.spec_from_file_location("_wh_user_sitecustomize", _candidate)
            if _spec is not None and _spec.loader is not None:
                _spec.loader.exec_module(_u.module_from_spec(_spec))
            break
'''


@dataclass
class CaptureRun:
    command: list[str]
    returncode: int
    report: IngestReport
    evicted: int = 0
    freed: int = 0
    notes: list[str] = field(default_factory=list)


def run_capture(
    workspace: Path,
    command: list[str],
    *,
    max_per_kernel: int = recorder.DEFAULT_MAX_PER_KERNEL,
    arg_bytes: int = recorder.DEFAULT_ARG_BYTES,
    budget: int = DEFAULT_BUDGET_BYTES,
    env: dict[str, str] | None = None,
) -> CaptureRun:
    workspace = workspace.resolve()
    store = CaptureStore(workspace)
    private = Path(tempfile.mkdtemp(prefix="wh-capture-"))
    try:
        boot = private / "boot"
        raw = private / "raw"
        boot.mkdir()
        raw.mkdir()
        (boot / "sitecustomize.py").write_text(_SITECUSTOMIZE, encoding="utf-8")
        child = dict(os.environ if env is None else env)
        child.pop("PYTEST_CURRENT_TEST", None)  # ours (capture run from a test), not the command's
        child["PYTHONPATH"] = os.pathsep.join([str(boot), child.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        child[recorder.RAW_ENV] = str(raw)
        child[recorder.WORKSPACE_ENV] = str(workspace)
        child[recorder.MAX_ENV] = str(max_per_kernel)
        child[recorder.ARG_CAP_ENV] = str(arg_bytes)
        child[recorder.COMMAND_ENV] = shlex.join(command)
        try:
            returncode = subprocess.call(command, cwd=str(workspace), env=child)
        except OSError as exc:
            print(f"warp-harness capture: cannot run {command[0]!r}: {exc.strerror or exc}", file=sys.stderr)
            returncode = 127
        report = store.ingest(raw)
        evicted, freed = store.prune(budget)
        return CaptureRun(command, returncode, report, evicted, freed)
    finally:
        shutil.rmtree(private, ignore_errors=True)
