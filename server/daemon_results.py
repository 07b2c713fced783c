"""What the daemon's messages do in the editor (docs/protocol.md): a file's result becomes its dynamic
diagnostics, job states and pipeline progress become the `warp-harness/daemonState` notification and
work-done progress, the link's events become the daemon state (and a warning when it is lost).

Messages arrive on the link's thread (server/daemon_link.py) and are handled on the event loop.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from warp_harness.server import publishing
from warp_harness.server.documents import DynamicState
from warp_harness.server.replay_actions import case_files

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer
    from warp_harness.server.daemon_link import LinkEvent
    from warp_harness.wire.messages import DaemonMessage, Progress, Report, StateChange

log = logging.getLogger("warp_harness.server")


def handle(ls: WarpHarnessServer, message: LinkEvent | DaemonMessage) -> None:
    """One message from a daemon link, on the event loop; a bad one is logged, never raised."""
    try:
        _handle(ls, message)
    except Exception:
        log.exception("daemon message %s failed", type(message).__name__)


def _handle(ls: WarpHarnessServer, message: LinkEvent | DaemonMessage) -> None:
    # the link's and the schema's classes are imported here: a server without a daemon never loads them
    from warp_harness.server.daemon_link import LinkEvent
    from warp_harness.wire.messages import Progress, Removed, Result, StateChange

    if isinstance(message, LinkEvent):
        _link(ls, message)
    elif isinstance(message, Result):
        _result(ls, message.report)
    elif isinstance(message, StateChange):
        _job_state(ls, message)
    elif isinstance(message, Progress):
        _progress(ls, message)
    elif isinstance(message, Removed):
        path = _absolute(ls, message.path)
        if path is not None:
            uri = ls.documents.set_daemon_state(path, None)
            if uri is not None:
                publishing.publish(ls, uri)


def _link(ls: WarpHarnessServer, event: LinkEvent) -> None:
    state = event.state
    if state == "connected":
        trusted = event.welcome is not None and event.welcome.trusted
        ls.set_daemon_state("idle" if trusted else "untrusted", None)
    elif state == "disconnected":
        ls.set_daemon_state("failed", f"lost the daemon: {event.message}")
        ls.show_warning(
            f"warp-harness: lost the connection to the daemon ({event.message}); showing the static tier only"
        )
    elif state == "stopped":
        ls.set_daemon_state("off", "the daemon stopped")
    elif state == "unavailable" and ls.daemon_state not in ("starting",):
        ls.set_daemon_state("off", "no daemon runs for this workspace")


def _absolute(ls: WarpHarnessServer, path: Any) -> str | None:
    """A path the daemon sent (relative to its workspace, or absolute), resolved."""
    if not isinstance(path, str):
        return None
    candidate = Path(path)
    if not candidate.is_absolute():
        for root in ls.roots:
            if (root / candidate).exists():
                candidate = root / candidate
                break
        else:
            candidate = (ls.roots[0] / candidate) if ls.roots else candidate
    return str(candidate.resolve())


def _result(ls: WarpHarnessServer, report: Report) -> None:
    path = _absolute(ls, report.path)
    if path is None:
        return
    status = str(report.status or "ok")
    root = next((r for r in ls.roots if Path(path).is_relative_to(r)), None)
    cases = case_files(root, list(report.repros)) if root is not None else []
    state = DynamicState(report.dynamic(), dict(report.kernels), status, time.time(), cases)
    uri = ls.documents.set_daemon_state(path, state)
    _end_progress(ls, report.path)
    if uri is not None:
        publishing.publish(ls, uri)
    if status == "error":
        ls.show_warning(f"warp-harness daemon: checking {Path(path).name} failed; see its diagnostics")
    if ls.daemon_state not in ("untrusted",):
        ls.set_daemon_state("failed" if status == "error" else "idle", None, path)


def _job_state(ls: WarpHarnessServer, message: StateChange) -> None:
    path, state = message.path, message.state
    capabilities = ls.client_capabilities.window
    supports_progress = bool(capabilities and capabilities.work_done_progress)
    if state == "running":
        ls.set_daemon_state("compiling", f"checking {path}", path)
        if supports_progress and path not in ls.job_progress:
            token = f"warp-harness-daemon-{path}-{time.monotonic_ns()}"
            ls.job_progress[path] = token
            title = f"warp-harness: checking {Path(path).name}"

            def begin(*_: Any) -> None:
                ls.work_done_progress.begin(
                    token, types.WorkDoneProgressBegin(title=title, cancellable=False)
                )

            ls.work_done_progress.create(token, callback=begin)
    elif state == "done":
        _end_progress(ls, path)


def _progress(ls: WarpHarnessServer, message: Progress) -> None:
    stage = message.stage  # the pipeline step (daemon/pipeline.py)
    state = message.activity or (ls.daemon_state if ls.daemon_state != "idle" else "compiling")
    detail = " ".join(v for v in (message.kernel, message.device) if v)
    ls.set_daemon_state(state, f"{stage} {detail}".strip(), None)
    for token in ls.job_progress.values():
        ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=f"{stage} {detail}"))


def _end_progress(ls: WarpHarnessServer, path: str) -> None:
    token = ls.job_progress.pop(path, "")
    if token:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


__all__ = ["handle"]
