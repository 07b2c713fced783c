"""Issue 12, item 3: `serve --tcp` talks only to the user who started it.

A real ``python -m warp_harness serve --tcp`` process. Before the fix any local user could
connect, send ``initializationOptions: {"trust": true}`` and ``warp-harness.startDaemon`` on a
folder of theirs: the server, running as the victim, started a trusted daemon there. Now the
first message must be ``initialize`` carrying the token the server wrote to a 0600 file in the
user's private runtime folder, and ``startDaemon`` takes only the server's workspace folders.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import NOBODY, Procs, lsp_frame, lsp_over_socket, wait_for

from warp_harness.daemon import protocol as P

INVALID_REQUEST = -32600
# a module that leaves a marker when anything imports it (the attacker's "kernel")
MARKED = 'import pathlib\npathlib.Path(__file__).with_name("EXECUTED").write_text("ran")\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_tcp(procs: Procs, folder: Path) -> tuple[subprocess.Popen[str], int, Path]:
    """A real TCP server; its port and the token file it names on stderr."""
    port = _free_port()
    err = folder / "serve-tcp.err"
    with open(err, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "warp_harness", "serve", "--tcp", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=fh,
            cwd="/",
            start_new_session=True,
            text=True,
        )
    procs.append(proc)
    line = wait_for(lambda: "authToken" in err.read_text() and err.read_text(), 60, "the token line")
    token_file = Path(line.splitlines()[0].rsplit(" ", 1)[1])

    # not by connecting: before the fix any connection that ended took the server down
    wait_for(lambda: proc.poll() is not None or _listening(port), 60, "the server to listen")
    assert proc.poll() is None, err.read_text()
    return proc, port, token_file


def _listening(port: int) -> bool:
    """Whether a socket listens on 127.0.0.1:``port`` (from /proc/net/tcp)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == f"0100007F:{port:04X}" and fields[3] == "0A":  # 0A: LISTEN
            return True
    return False


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def _initialize(root: Path, options: object) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "processId": None,
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": {},
            "initializationOptions": options,
        },
    }


def _start_daemon(request_id: int, folder: Path) -> dict[str, object]:
    params = {"command": "warp-harness.startDaemon", "arguments": [str(folder)]}
    return {"jsonrpc": "2.0", "id": request_id, "method": "workspace/executeCommand", "params": params}


def _no_daemon_for(folder: Path, seconds: float) -> None:
    """Nothing starts serving ``folder`` within ``seconds`` (no socket, no state, no marker)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert not P.socket_path_for(folder).exists(), "a daemon started for the folder"
        assert P.read_daemon_state(folder) is None, "a daemon recorded itself for the folder"
        assert not (folder / "EXECUTED").exists()
        time.sleep(0.1)


def _stop_any_daemon(folder: Path) -> None:
    """Shut down a daemon the server started for ``folder`` (only when the test failed)."""
    try:
        with P.Client(P.socket_path_for(folder), timeout=10) as client:
            client.request("shutdown")
    except (OSError, P.ConnectionClosed, P.ProtocolError):
        pass


@pytest.fixture
def attacker_folder() -> Iterator[Path]:
    """A folder of the other user's (outside pytest's private tmp, which nobody cannot enter)."""
    folder = Path(tempfile.mkdtemp(prefix="wh-attacker-"))
    (folder / "evil.py").write_text(MARKED)
    (folder / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = true\ndaemon = true\n")
    for path in (folder, folder / "evil.py", folder / "pyproject.toml"):
        os.chown(path, NOBODY, NOBODY)
    os.chmod(folder, 0o755)
    yield folder
    _stop_any_daemon(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _attack_as_nobody(port: int, folder: Path, token_file: Path) -> int:
    """From a forked child running as ``nobody``: read the token (if it can), connect, ask for
    trust and a daemon in ``folder``. Exit status: 0 refused as expected; 10 the token file was
    readable; 11 initialize answered with a result; 12 startDaemon answered with a result;
    13 the connection stayed open after the refusal."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = 0
            try:
                token_file.read_text()
                code = 10
            except OSError:
                pass
            if code == 0:
                # a plain connect: getaddrinfo would load the idna codec, which nobody cannot read
                conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                conn.settimeout(30)
                conn.connect(("127.0.0.1", port))
                lsp = lsp_over_socket(conn)
                lsp.send(_initialize(folder, {"trust": True, "daemon": True}))
                reply = lsp.reply_to(1, timeout=30)
                if reply is not None and "result" in reply:
                    code = 11
                    lsp.notify("initialized", {})
                try:  # a refused client's connection is closed: the write may fail
                    lsp.send(_start_daemon(2, folder))
                except OSError:
                    pass
                started = lsp.reply_to(2, timeout=10) if code == 11 else None
                if started is not None and "result" in started:
                    code = 12
                if code == 0 and not lsp.wait_closed(10):
                    code = 13
                conn.close()
        except BaseException:
            code = 98 if code == 0 else code
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code != 99, "the child could not drop its privileges"
    return code


def test_another_user_cannot_start_a_daemon_through_the_tcp_server(
    tmp_path: Path, procs: Procs, attacker_folder: Path
) -> None:
    proc, port, token_file = _serve_tcp(procs, tmp_path)
    st = os.stat(token_file)
    assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.stat(token_file.parent).st_mode) == 0o700
    code = _attack_as_nobody(port, attacker_folder, token_file)
    assert code == 0, f"the attack got through (child status {code})"
    _no_daemon_for(attacker_folder, 5.0)
    # the refused client did not take the server down: the user still gets served
    assert proc.poll() is None
    conn = _connect(port)
    lsp = lsp_over_socket(conn)
    lsp.send(_initialize(tmp_path, {"authToken": token_file.read_text().strip()}))
    reply = lsp.reply_to(1)
    assert reply is not None and reply["result"]["serverInfo"]["name"] == "warp-harness", reply
    conn.close()


def test_a_client_without_the_right_token_is_refused(tmp_path: Path, procs: Procs) -> None:
    proc, port, token_file = _serve_tcp(procs, tmp_path)
    token = token_file.read_text().strip()
    refusals = [
        _initialize(tmp_path, None),  # no token
        _initialize(tmp_path, {"authToken": "x" * len(token)}),  # a wrong one
        _initialize(tmp_path, {"authToken": token[:-1]}),  # almost right
        {"jsonrpc": "2.0", "id": 1, "method": "warp-harness/serverInfo", "params": {}},  # not initialize
    ]
    for first in refusals:
        conn = _connect(port)
        lsp = lsp_over_socket(conn)
        lsp.send(first)
        reply = lsp.reply_to(1)
        assert reply is not None and reply["error"]["code"] == INVALID_REQUEST, (first, reply)
        assert "result" not in reply
        assert lsp.wait_closed(10), "the refused connection stayed open"
        conn.close()
    # a notification first (nothing to answer): the connection is closed, nothing is handled
    conn = _connect(port)
    conn.sendall(lsp_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    assert lsp_over_socket(conn).wait_closed(10)
    conn.close()
    assert proc.poll() is None, "a refused client ended the server"
    # the right token works, and the server answers requests
    conn = _connect(port)
    lsp = lsp_over_socket(conn)
    lsp.send(_initialize(tmp_path, {"authToken": token}))
    reply = lsp.reply_to(1)
    assert reply is not None and "result" in reply, reply
    lsp.notify("initialized", {})
    info = lsp.request("warp-harness/serverInfo", {})
    assert info is not None and info["result"]["warp_imported"] is False, info
    assert "authToken" not in str(info["result"]["overrides"])
    conn.close()


def test_start_daemon_takes_only_the_servers_workspace_folders(tmp_path: Path, procs: Procs) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    (elsewhere / "evil.py").write_text(MARKED)
    _proc, port, token_file = _serve_tcp(procs, tmp_path)
    conn = _connect(port)
    lsp = lsp_over_socket(conn)
    lsp.send(_initialize(ws, {"authToken": token_file.read_text().strip()}))
    reply = lsp.reply_to(1)
    assert reply is not None and "result" in reply, reply
    lsp.notify("initialized", {})
    for folder in (elsewhere, elsewhere.as_uri()):
        params = {"command": "warp-harness.startDaemon", "arguments": [str(folder)]}
        reply = lsp.request("workspace/executeCommand", params)
        assert reply is not None and "refused" in reply["result"]["message"], reply
    try:
        _no_daemon_for(elsewhere, 3.0)
    finally:
        _stop_any_daemon(elsewhere)
    # the server's own folder is accepted (and its daemon stopped again)
    reply = lsp.request(
        "workspace/executeCommand", {"command": "warp-harness.startDaemon", "arguments": [str(ws)]}
    )
    assert reply is not None and reply["result"]["message"] == "starting", reply
    wait_for(lambda: P.our_socket(P.daemon_socket(ws)), 60, "the workspace's daemon")
    reply = lsp.request(
        "workspace/executeCommand", {"command": "warp-harness.stopDaemon", "arguments": [str(ws)]}
    )
    assert reply is not None and reply["result"]["message"] == "stopped", reply
    conn.close()
