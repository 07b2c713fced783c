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

from warp_harness.daemon.pipeline import job_state
from warp_harness.record import Record
from warp_harness.server import publishing
from warp_harness.server.documents import DynamicState
from warp_harness.server.replay_actions import case_files

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer

log = logging.getLogger("warp_harness.server")


def handle(ls: WarpHarnessServer, message: dict[str, Any]) -> None:
    """One message from a daemon link, on the event loop; a bad one is logged, never raised."""
    try:
        _handle(ls, message)
    except Exception:
        log.exception("daemon message %r failed", message.get("type"))


def _handle(ls: WarpHarnessServer, message: dict[str, Any]) -> None:
    kind = message.get("type")
    if kind == "link":
        _link(ls, message)
    elif kind == "result":
        _result(ls, message)
    elif kind == "state":
        _job_state(ls, message)
    elif kind == "progress":
        _progress(ls, message)
    elif kind == "removed":
        path = _absolute(ls, message.get("path"))
        if path is not None:
            uri = ls.documents.set_daemon_state(path, None)
            if uri is not None:
                publishing.publish(ls, uri)


def _link(ls: WarpHarnessServer, message: dict[str, Any]) -> None:
    state = message.get("state")
    if state == "connected":
        welcome = message.get("welcome") or {}
        ls.set_daemon_state("idle" if welcome.get("trusted") else "untrusted", None)
    elif state == "disconnected":
        ls.set_daemon_state("failed", f"lost the daemon: {message.get('message')}")
        ls.show_warning(
            f"warp-harness: lost the connection to the daemon ({message.get('message')}); "
            "showing the static tier only"
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


def _result(ls: WarpHarnessServer, message: dict[str, Any]) -> None:
    path = _absolute(ls, message.get("path"))
    if path is None:
        return
    records = []
    for data in message.get("records") or []:
        if isinstance(data, dict) and data.get("tier") == "dynamic":
            try:
                record = Record.from_dict(data)
            except (KeyError, ValueError, TypeError):
                continue
            records.append(record)
    status = str(message.get("status") or "ok")
    kernels = message.get("kernels") if isinstance(message.get("kernels"), dict) else {}
    root = next((r for r in ls.roots if Path(path).is_relative_to(r)), None)
    cases = case_files(root, message.get("repros")) if root is not None else []
    state = DynamicState(records, kernels or {}, status, time.time(), cases)
    uri = ls.documents.set_daemon_state(path, state)
    _end_progress(ls, str(message.get("path")))
    if uri is not None:
        publishing.publish(ls, uri)
    if status == "error":
        ls.show_warning(f"warp-harness daemon: checking {Path(path).name} failed; see its diagnostics")
    if ls.daemon_state not in ("untrusted",):
        ls.set_daemon_state("failed" if status == "error" else "idle", None, path)


def _job_state(ls: WarpHarnessServer, message: dict[str, Any]) -> None:
    path = str(message.get("path"))
    state = message.get("state")
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


def _progress(ls: WarpHarnessServer, message: dict[str, Any]) -> None:
    stage = str(message.get("stage") or "")  # the pipeline step (daemon/pipeline.py)
    state = job_state(stage) or (ls.daemon_state if ls.daemon_state != "idle" else "compiling")
    detail = " ".join(str(message[k]) for k in ("kernel", "device") if message.get(k))
    ls.set_daemon_state(state, f"{stage} {detail}".strip(), message.get("path"))
    for token in ls.job_progress.values():
        ls.work_done_progress.report(token, types.WorkDoneProgressReport(message=f"{stage} {detail}"))


def _end_progress(ls: WarpHarnessServer, path: str) -> None:
    token = ls.job_progress.pop(path, "")
    if token:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


__all__ = ["handle"]
