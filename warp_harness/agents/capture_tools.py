"""The MCP tools ``capture`` and ``accept`` (docs/capture.md): record a command's launches, accept
their replayed outputs as the baseline. Both run workspace code: refused unless the server was
started with --trust. ``capture`` runs Python commands only (``python ...``, ``pytest ...``), with
this server's interpreter: an agent records its tests or scripts, not any program."""

from __future__ import annotations

import sys
from typing import Any

from warp_harness.agents.tools import ToolRefused, Workspace, _counts, _untrusted

_PYTHON_NAMES = ("python", "python3")


def _python_command(command: list[str]) -> list[str]:
    if not command or not all(isinstance(a, str) for a in command):
        raise ToolRefused("capture needs a command: a list such as ['pytest', 'tests/test_k.py']")
    head = command[0].rsplit("/", 1)[-1]
    if head in _PYTHON_NAMES:
        return [sys.executable, *command[1:]]
    if head == "pytest":
        return [sys.executable, "-m", "pytest", *command[1:]]
    raise ToolRefused(f"capture runs Python commands only (python ..., pytest ...), not {command[0]!r}")


def capture(ws: Workspace, command: list[str], max_per_kernel: int = 4) -> dict[str, Any]:
    from warp_harness.capture.run import run_capture

    if not ws.trusted:
        return {**_untrusted(ws, "capture"), "launches": 0, "captured": []}
    run = run_capture(ws.root, _python_command(command), max_per_kernel=max(1, int(max_per_kernel)))
    return {
        "status": "ok",
        "exit_status": run.returncode,
        "launches": run.report.launches,
        "captured": sorted(run.report.kernels),
        "not_recorded": run.report.skipped,
        "bytes_stored": run.report.bytes_added,
        "evicted": run.evicted,
        "records": [],
    }


def accept(ws: Workspace, path: str, kernel: str | None = None) -> dict[str, Any]:
    from warp_harness.daemon.captured.hook import supervisor_call
    from warp_harness.daemon.captured.replay import accept_module
    from warp_harness.daemon.options import load_runtime_options
    from warp_harness.daemon.supervisor import Supervisor

    if not ws.trusted:
        return {**_untrusted(ws, "accept"), "accepted": 0}
    file = ws.path(path)
    options = load_runtime_options(ws.root, {})
    with Supervisor(ws.root, options, warmup=False) as sup:
        accepted, outcome = accept_module(
            ws.root,
            file,
            ws.shown(file),
            options,
            supervisor_call(sup),
            kernels={kernel} if kernel else None,
        )
    records = [r.to_dict() for r in outcome.records]
    return {"status": "ok", "accepted": accepted, "records": records, **_counts(records)}
