"""Issue 12, items 4 and 10: where a daemon serves is decided by the user's private runtime
folder, and one workspace gets one daemon.

Item 4: a repository can ship ``.warp-harness/daemon.json``. Before the fix one naming another
workspace's socket made the server attach to that daemon (and ``stopDaemon`` shut it down),
and one naming a live socket with ``"pid": 1`` made ``warp-harness daemon`` refuse to start
("already serves ... kill 1"). Now that file is written for information only and never read.

Item 10: daemons started at once on one workspace used to check, then bind: two could serve,
and stopping the orphan deleted the live one's socket. Now an flock decides.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from reliability_helpers import (
    LspStream,
    Procs,
    alive,
    ping,
    spawn_daemon,
    start_lsp_stdio,
    wait_for,
    wait_ready,
)

from warp_harness.daemon import protocol as P
from warp_harness.server.daemon_link import DaemonLink, daemon_socket


def _ship_daemon_json(ws: Path, sock: Path) -> None:
    """What a hostile repository ships: its daemon 'runs' as pid 1 on someone else's socket."""
    state = ws / ".warp-harness"
    state.mkdir(parents=True, exist_ok=True)
    fake = {"pid": 1, "socket": str(sock), "protocol": 1, "trusted": True, "workspace": str(ws)}
    (state / "daemon.json").write_text(json.dumps(fake))


def _execute(lsp: LspStream, command: str, folder: Path) -> dict[str, object]:
    reply = lsp.request(
        "workspace/executeCommand", {"command": command, "arguments": [str(folder)]}, timeout=60
    )
    assert reply is not None and "result" in reply, reply
    result: dict[str, object] = reply["result"]
    return result


def test_a_shipped_daemon_json_is_never_used_to_connect_or_to_refuse(tmp_path: Path, procs: Procs) -> None:
    theirs, mine = tmp_path / "theirs", tmp_path / "mine"
    theirs.mkdir()
    mine.mkdir()
    (mine / "k.py").write_text("x = 1\n")
    sock_a = tmp_path / "run" / "a.sock"
    other = spawn_daemon(theirs, sock_a, trust=False)  # another workspace's real daemon
    procs.append(other)
    wait_ready(other, sock_a)
    _ship_daemon_json(mine, sock_a)

    # the server: stopDaemon for `mine` (no daemon of its own yet) leaves `theirs` alone
    assert DaemonLink(mine, lambda m: None).stop_daemon(timeout=5) is False
    assert alive(other.pid) and ping(sock_a) < 5, "the other workspace's daemon was stopped"
    assert daemon_socket(mine) == P.socket_path_for(mine)
    _, lsp = start_lsp_stdio(procs, tmp_path)
    assert lsp.initialize(mine) is not None
    reply = _execute(lsp, "warp-harness.stopDaemon", mine)
    assert reply["message"] == "not running", reply
    assert alive(other.pid) and ping(sock_a) < 5, "the other workspace's daemon was stopped"

    # the CLI: a daemon for `mine` starts normally (not "already serves ... kill 1")
    sock_b = tmp_path / "run" / "b.sock"
    mine_daemon = spawn_daemon(mine, sock_b, trust=False)
    procs.append(mine_daemon)
    wait_ready(mine_daemon, sock_b)
    with P.Client(sock_b, timeout=10) as client:
        assert client.request("hello", client="test")["workspace"] == str(mine.resolve())
    assert daemon_socket(mine) == sock_b  # from the private runtime folder, not the workspace
    state = P.read_daemon_state(mine)
    assert state is not None and state["pid"] == mine_daemon.pid
    assert stat_mode(P.daemon_state_path(mine)) == 0o600

    # the workspace's file is rewritten (information only); planting it again changes nothing
    _ship_daemon_json(mine, sock_a)
    assert daemon_socket(mine) == sock_b
    reply = _execute(lsp, "warp-harness.stopDaemon", mine)
    assert reply["message"] == "stopped", reply
    assert mine_daemon.wait(30) == 0
    assert alive(other.pid) and ping(sock_a) < 5, "the other workspace's daemon was stopped"
    assert not sock_b.exists() and P.read_daemon_state(mine) is None


def stat_mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777


# One racer process runs `warp-harness daemon WS` (the real CLI, `main`) once per workspace
# path it reads, so that many rounds cost one start-up. Each round all racers get the path
# within a few milliseconds; each reports {"rc", "err"} (its stderr of that run) when its
# daemon run ends: at once for a loser, at shutdown for the winner.
RACER = """
import contextlib, io, json, sys
from warp_harness.cli import main
import warp_harness.daemon.server
print(json.dumps({"ready": True}), flush=True)
while True:
    ws = sys.stdin.readline().strip()
    if not ws:
        break
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["daemon", ws, "--no-trust", "--no-watch"])
    print(json.dumps({"rc": rc, "err": err.getvalue()}), flush=True)
"""


def _start_racers(n: int, procs: Procs) -> tuple[list[subprocess.Popen[str]], queue.Queue[tuple[int, Any]]]:
    reports: queue.Queue[tuple[int, Any]] = queue.Queue()
    racers = []
    for i in range(n):
        racer = subprocess.Popen(
            [sys.executable, "-c", RACER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd="/",
            start_new_session=True,
        )
        procs.append(racer)
        racers.append(racer)

        def pump(i: int = i, out: Any = racer.stdout) -> None:
            for line in out:
                reports.put((i, json.loads(line)))

        threading.Thread(target=pump, daemon=True).start()
    for _ in range(n):
        _, report = reports.get(timeout=120)
        assert report == {"ready": True}
    return racers, reports


def test_daemons_started_at_once_on_one_workspace_leave_exactly_one(tmp_path: Path, procs: Procs) -> None:
    rounds, n = 30, 8
    racers, reports = _start_racers(n, procs)
    for round_ in range(rounds):
        ws = tmp_path / f"ws{round_}"
        ws.mkdir()
        for racer in racers:
            assert racer.stdin is not None
            racer.stdin.write(f"{ws}\n")
            racer.stdin.flush()
        ended: dict[int, Any] = {}
        with contextlib.suppress(queue.Empty):
            while len(ended) < n - 1:
                i, report = reports.get(timeout=30)
                ended[i] = report
        serving = n - len(ended)
        assert serving == 1, f"round {round_}: {serving} daemons serve one workspace"
        for report in ended.values():
            assert report["rc"] == 1 and f"already serves {ws.resolve()}" in report["err"], report
        # the winner still answers once the losers are gone, on the socket its state names
        (winner,) = (r for i, r in enumerate(racers) if i not in ended)
        # the losers end on the claimed socket, before the winner has listened and written its state
        state = wait_for(
            lambda ws=ws: P.read_daemon_state(ws), 30, f"round {round_}: the winner's daemon.json"
        )
        assert state is not None and state["pid"] == winner.pid
        sock = P.socket_path_for(ws)
        assert ping(sock) < 5
        # and it has not ended: its report comes only at the shutdown below (this replaces a 1 s wait for
        # an nth report in every round, 30 s of the test's 34; a winner that ends before the shutdown
        # also fails the shutdown's request and its rc check)
        if not reports.empty():
            i, report = reports.get_nowait()
            raise AssertionError(f"round {round_}: the winner ended before its shutdown: {i} {report}")
        with P.Client(sock, timeout=10) as client:
            client.request("shutdown")
        _, report = reports.get(timeout=30)
        assert report["rc"] == 0, report
        assert not sock.exists() and P.read_daemon_state(ws) is None
    for racer in racers:
        assert racer.stdin is not None
        racer.stdin.close()
        assert racer.wait(30) == 0
