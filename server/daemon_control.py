"""The server's daemons: one link per workspace folder (server/daemon_link.py), connected once the first
diagnostics are out, and the `warp-harness.startDaemon` / `warp-harness.stopDaemon` commands.

Starting a daemon runs `warp-harness daemon` with trust from the editor's settings only, in one of the
server's own workspace folders; the server itself never executes workspace code. The editor's
`replayTolerances` (the captured launches' behaviour diff, docs/capture.md) reach the daemon as its
command line's `--replay-tolerances`: the user's, as trusted as the flag typed in a terminal (a
workspace's own `[tool.warp-harness.runtime.tolerances]` stays the workspace's, each record judged with a
looser one says so).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer
    from warp_harness.server.daemon_link import DaemonLink

log = logging.getLogger("warp_harness.server")

START_DAEMON = "warp-harness.startDaemon"
STOP_DAEMON = "warp-harness.stopDaemon"
# the daemon links start once the analyses of start-up are out, or after this long at the latest
LINK_START_CAP_S = 2.0


def connect_after_start_up(ls: WarpHarnessServer) -> None:
    """Connect to the daemons once the documents opened so far are analysed (their diagnostics
    published, or dropped), at once when there are none; after ``LINK_START_CAP_S`` at the latest.
    The first diagnostics do not wait for the links (importing the daemon protocol, a thread per
    link, a connection attempt): their `daemonState` follows them. On the event loop."""
    if ls.loop is None:
        return
    connected = False

    def connect_once() -> None:
        nonlocal connected
        if not connected:
            connected = True
            connect(ls)

    started = [job.future for job in ls.worker.jobs.values() if not job.future.done()]
    if not started:
        connect_once()
        return
    remaining = len(started)

    def settled(_: object) -> None:
        nonlocal remaining
        remaining -= 1
        if remaining == 0:
            connect_once()

    for future in started:  # only these: a user typing on does not hold the links off
        future.add_done_callback(settled)
    ls.loop.call_later(LINK_START_CAP_S, connect_once)


def connect(ls: WarpHarnessServer) -> None:
    """Start the link of every workspace folder whose settings want a daemon."""
    if ls.links_stopped:
        return
    for root in ls.roots:
        if ls.daemon_enabled(root):
            link(ls, root).start()


def link(ls: WarpHarnessServer, root: Path) -> DaemonLink:
    if root not in ls.links:
        from warp_harness.server.daemon_link import DaemonLink  # a workspace without a daemon skips it

        ls.links[root] = DaemonLink(root, ls.from_daemon_thread)
    return ls.links[root]


def stop_links(ls: WarpHarnessServer) -> None:
    """At shutdown: every link closed, the daemons this server started stopped."""
    ls.links_stopped = True
    for one in ls.links.values():
        one.close()
        if one.runs_spawned_daemon():
            one.stop_daemon(timeout=5.0)


def folder_removed(ls: WarpHarnessServer, root: Path) -> None:
    found = ls.links.pop(root, None)
    if found is not None:
        found.close()


def daemon_flags(payload: Any) -> tuple[str, ...]:
    """The command-line flags of a daemon the server starts that come from the editor's settings
    (``payload``: `initializationOptions` or `didChangeConfiguration`'s): `replayTolerances`
    (``{"[KERNEL.]DTYPE": [rtol, atol] or {rtol, atol}}``) as ``--replay-tolerances KEY=RTOL,ATOL``.
    ConfigError for a bad value (the caller reports it and keeps the previous flags)."""
    from warp_harness.server.options import client_table

    table = client_table(payload) or {}
    value = next((table[k] for k in ("replayTolerances", "replay_tolerances") if k in table), None)
    if value is None:
        return ()
    from warp_harness.daemon.captured.tolerances import parse_table  # numpy: only when set

    flags: list[str] = []
    for key, (rtol, atol) in sorted(parse_table(value, "the editor's `replayTolerances`").items()):
        flags += ["--replay-tolerances", f"{key}={rtol!r},{atol!r}"]
    return tuple(flags)


def start_daemon(ls: WarpHarnessServer, args: tuple[Any, ...]) -> dict[str, Any]:
    root = _root_argument(ls, args)
    if isinstance(root, str):
        return {"state": ls.daemon_state, "message": root}
    ls.set_daemon_state("starting", f"starting the daemon for {root}")
    outcome = link(ls, root).spawn_daemon(trust=ls.user_trusts(), flags=ls.daemon_flags)
    return {"state": ls.daemon_state, "message": outcome}


def stop_daemon(ls: WarpHarnessServer, args: tuple[Any, ...]) -> dict[str, Any]:
    root = _root_argument(ls, args)
    if isinstance(root, str):
        return {"state": ls.daemon_state, "message": root}
    stopped = link(ls, root).stop_daemon()
    ls.set_daemon_state("off", "daemon stopped" if stopped else "no daemon was running")
    return {"state": ls.daemon_state, "message": "stopped" if stopped else "not running"}


def _root_argument(ls: WarpHarnessServer, args: tuple[Any, ...]) -> Path | str:
    """The workspace folder a daemon command names (the first one when it names none), or why
    there is none. Only the server's own workspace folders (from `initialize` and
    `didChangeWorkspaceFolders`) are accepted: a command must not start a daemon, trusted by
    the editor's settings, in a folder the client made up."""
    for arg in args:
        for candidate in arg if isinstance(arg, list) else [arg]:
            if isinstance(candidate, str) and candidate:
                path = to_fs_path(candidate) if candidate.startswith("file:") else candidate
                if not path:
                    continue
                root = Path(path).resolve()
                if root not in ls.roots:
                    log.warning("daemon command for %s refused: not a workspace folder", root)
                    return f"refused: {root} is not one of this server's workspace folders"
                return root
    return ls.roots[0] if ls.roots else "no workspace folder"


__all__ = [
    "START_DAEMON",
    "STOP_DAEMON",
    "connect",
    "connect_after_start_up",
    "daemon_flags",
    "folder_removed",
    "link",
    "start_daemon",
    "stop_daemon",
    "stop_links",
]
