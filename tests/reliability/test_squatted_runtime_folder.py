"""Issue 30, item 10: another local user takes the predictable runtime folder first.

Where there is no XDG runtime folder the daemon's socket, lock and state, and the TCP language
server's token, live in ``$TMPDIR/warp-harness-<uid>``. A folder of that name made beforehand by
uid 65534 made ``daemon`` and ``serve --tcp`` exit 2. Now a fresh private folder of an
unpredictable name replaces it, recorded in the user's private cache folder, and the clients
(``status``, ``results``, ``stop``, the language server's daemon link) find the daemon there.
Real processes: ``python -m warp_harness daemon`` / ``status`` / ``results`` / ``stop`` /
``serve --tcp``, with ``TMPDIR`` naming a sticky shared folder where the other user squats.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import NOBODY, Procs, lsp_over_socket, wait_for

from warp_harness.daemon import protocol as P

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")

KERNEL = "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = 1.0\n"


@pytest.fixture
def squatted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, dict[str, str]]]:
    """The squatted runtime folder and the environment of the user's processes (TMPDIR: the
    shared folder, no XDG runtime folder, a private cache folder of their own). This process
    uses the same, so ``P.runtime_dir()`` here is what the subprocesses find. The shared folder
    has a short path: a socket's path must fit in 108 bytes."""
    shared = Path(tempfile.mkdtemp(prefix="whsq-", dir="/tmp"))
    shared.chmod(0o1777)
    squat = shared / f"warp-harness-{os.getuid()}"
    squat.mkdir()
    squat.chmod(0o777)
    os.chown(squat, NOBODY, NOBODY)
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(TMPDIR=str(shared), XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("WARP_HARNESS_CACHE_DIR", None)
    for key in ("XDG_RUNTIME_DIR", "WARP_HARNESS_CACHE_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TMPDIR", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield squat, env
    shutil.rmtree(shared, ignore_errors=True)


def _cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "warp_harness", *args]
    return subprocess.run(command, env=env, cwd="/", capture_output=True, text=True, timeout=timeout)


def test_the_daemon_and_its_clients_meet_past_a_squatted_runtime_folder(
    squatted: tuple[Path, dict[str, str]], tmp_path: Path, procs: Procs
) -> None:
    squat, env = squatted
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "k.py").write_text(KERNEL)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "warp_harness", "daemon", str(ws), "--no-trust", "--no-watch"],
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    procs.append(daemon)
    # before the fix: exit 2, "... belongs to uid 65534, not to this user; refusing to use it"
    status = wait_for(
        lambda: daemon.poll() is not None or ((r := _cli(env, "status", str(ws))).returncode == 0 and r),
        60,
        "the daemon to answer `status`",
        interval=0.3,
    )
    assert daemon.poll() is None, daemon.communicate()
    assert status.returncode == 0, status.stderr
    runtime = P.runtime_dir()
    assert runtime != squat and runtime.parent == squat.parent and runtime.name.startswith(squat.name + "-")
    st = os.lstat(runtime)
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700
    sock = P.socket_path_for(ws)
    assert sock.parent == runtime and stat.S_ISSOCK(os.lstat(sock).st_mode)
    assert list(squat.iterdir()) == []  # nothing of ours in the other user's folder
    with P.Client(P.daemon_socket(ws), timeout=60) as client:  # a client of the protocol, here
        checked = client.request("check", path=str(ws / "k.py"))
    assert checked["type"] == "result", checked
    results = _cli(env, "results", str(ws), "--json")
    assert results.returncode == 0, results.stderr
    assert [r["path"] for r in json.loads(results.stdout)] == ["k.py"], results.stdout
    stop = _cli(env, "stop", str(ws))
    assert stop.returncode == 0, stop.stderr
    daemon.wait(30)
    _out, err = daemon.communicate()
    assert daemon.returncode == 0, err
    assert f"{squat} belongs to uid 65534" in err and str(runtime) in err  # said once, where it went


def _daemon_states(lsp: Any, want: str, timeout: float) -> list[dict[str, Any]]:
    """The `warp-harness/daemonState` notifications until one has state ``want``."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = lsp.messages.get(timeout=0.2)
        except queue.Empty:
            continue
        if msg is None:
            break
        if "method" in msg and "id" in msg:
            lsp.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
        elif msg.get("method") == "warp-harness/daemonState":
            seen.append(msg["params"])
            if msg["params"].get("state") == want:
                return seen
    raise AssertionError(f"no daemon state {want!r}; seen {[s.get('state') for s in seen]}")


def test_serve_tcp_and_its_daemon_link_past_a_squatted_runtime_folder(
    squatted: tuple[Path, dict[str, str]], tmp_path: Path, procs: Procs
) -> None:
    squat, env = squatted
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "k.py").write_text(KERNEL)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    err = tmp_path / "serve.err"
    with open(err, "w") as fh:
        server = subprocess.Popen(
            [sys.executable, "-m", "warp_harness", "serve", "--tcp", "--port", str(port)],
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=fh,
            start_new_session=True,
        )
    procs.append(server)  # type: ignore[arg-type]
    # before the fix: "cannot write the token file: ... belongs to uid 65534", exit 2
    line = wait_for(
        lambda: server.poll() is not None or ("authToken" in (t := err.read_text()) and t),
        60,
        "the token line",
    )
    assert server.poll() is None, err.read_text()
    token_file = Path(str(line).split("authToken = the contents of ", 1)[1].split()[0])
    assert token_file.parent == P.runtime_dir() != squat
    assert list(squat.iterdir()) == []
    conn = wait_for(lambda: _connect(port), 60, "the server to listen", interval=0.2)
    lsp = lsp_over_socket(conn)
    try:
        reply = lsp.initialize(ws, {"authToken": token_file.read_text().strip()})
        assert reply is not None and "result" in reply, reply
        # the server starts the workspace's daemon (untrusted: it runs nothing) and links to it
        started = lsp.request(
            "workspace/executeCommand", {"command": "warp-harness.startDaemon", "arguments": [ws.as_uri()]}
        )
        assert started is not None and "result" in started, started
        _daemon_states(lsp, "untrusted", 90)  # connected: the welcome of an untrusted daemon
        assert P.read_daemon_state(ws) is not None
        assert P.socket_path_for(ws).parent == P.runtime_dir()
    finally:
        try:
            with P.Client(P.daemon_socket(ws), timeout=10) as client:
                client.request("shutdown")
        except (OSError, P.ConnectionClosed, P.ProtocolError):
            pass
        conn.close()
    assert list(squat.iterdir()) == []


def _connect(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=30)
    except OSError:
        return None
