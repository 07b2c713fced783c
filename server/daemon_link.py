"""The language server's side of the daemon socket (docs/protocol.md).

A background thread connects to the workspace's daemon, says hello, fetches the last results,
then hands every pushed message to ``deliver`` (on the server's event loop), typed
(``wire.messages``: a message that does not follow the schema is logged and dropped). The link
asks for the dynamic tier's records only: the server computes the static ones itself. When the
daemon goes away it reports that (a ``LinkEvent``) and keeps trying to reconnect, so a daemon
started later is picked up.
The link itself never executes workspace code: starting a daemon runs `warp-harness daemon`,
which executes code only in a trusted workspace, in its own sandboxed worker.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warp_harness.wire.framing import Client, ConnectionClosed, ProtocolError
from warp_harness.wire.location import daemon_socket as protocol_daemon_socket
from warp_harness.wire.location import ensure_private_dir, runtime_dir, workspace_key
from warp_harness.wire.messages import (
    DaemonMessage,
    Error,
    Hello,
    MalformedMessage,
    Result,
    Results,
    Welcome,
    parse_daemon_message,
)
from warp_harness.wire.statuses import RecordSet

log = logging.getLogger(__name__)

CLIENT_NAME = "warp-harness-lsp"
RETRY_S = 1.0


@dataclass(frozen=True)
class LinkEvent:
    """The link's own news: ``state`` is ``connected`` (with the daemon's ``welcome``),
    ``disconnected``, ``stopped`` (the daemon went away after we asked it to) or ``unavailable``
    (no daemon answers); ``message`` says why."""

    state: str
    message: str | None = None
    welcome: Welcome | None = None


Deliver = Callable[[LinkEvent | DaemonMessage], None]


def daemon_socket(workspace: Path) -> Path:
    """The socket the workspace's daemon recorded in the user's private runtime folder (a
    daemon started with --socket), else the default. Never ``.warp-harness/daemon.json``: a
    repository can ship one naming another workspace's socket."""
    return protocol_daemon_socket(workspace)


class DaemonLink:
    """One workspace's connection to its daemon. ``deliver`` gets ``LinkEvent``s and the daemon's
    typed messages."""

    def __init__(self, workspace: Path, deliver: Deliver) -> None:
        self.workspace = workspace
        self._deliver = deliver
        self._stop = threading.Event()
        self._client: Client | None = None
        self._thread: threading.Thread | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.connected = False
        # set while we ask the daemon to stop, so that its going away is not reported as a failure
        self._stopping = False

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="warp-harness-daemon-link", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        client = self._client
        if client is not None:
            try:
                client.close()
            except OSError:
                pass

    # ------------------------------------------------------------------ the daemon process

    def spawn_daemon(self, trust: bool, flags: tuple[str, ...] = ()) -> str:
        """Start `warp-harness daemon` for the workspace (unless one answers already); ``flags``:
        more of its command line, from the editor's settings (daemon_control.daemon_flags)."""
        if self.connected:
            return "already running"
        from warp_harness.launch import module_command

        # explicit either way: the daemon would otherwise take `trust` from the workspace's own
        # pyproject.toml, which the workspace writes itself. `module_command` keeps the current
        # folder off sys.path (it is our runtime folder, but runpy imports before our code runs).
        trust_flag = "--trust" if trust else "--no-trust"
        args = ("daemon", str(self.workspace), trust_flag, *flags)
        command = module_command("warp_harness", *args, python=sys.executable)
        # the log goes to the user's private runtime folder, not into the workspace (whose
        # .warp-harness may be a symlink to anywhere); the daemon starts outside the workspace
        log_path = ensure_private_dir(runtime_dir()) / f"{workspace_key(self.workspace)}.daemon.log"
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "ab") as log:
            self._process = subprocess.Popen(
                command,
                cwd=runtime_dir(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.start()
        return "starting"

    def stop_daemon(self, timeout: float = 10.0) -> bool:
        """Ask the workspace's daemon to shut down; True when one was running."""
        self._stopping = True
        try:
            with Client(daemon_socket(self.workspace), timeout=timeout) as client:
                welcome = client.request(Hello.TYPE, client=CLIENT_NAME, subscribe=False)
                if welcome.get("workspace") != str(self.workspace.resolve()):
                    return self._reap(timeout)  # not this workspace's daemon: leave it alone
                client.request("shutdown")
        except (OSError, ConnectionClosed, ProtocolError, TimeoutError):
            return self._reap(timeout)
        self._reap(timeout)
        return True

    def _reap(self, timeout: float) -> bool:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return False
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
        return True

    def runs_spawned_daemon(self) -> bool:
        """Whether a daemon this link started is still running."""
        return self._process is not None and self._process.poll() is None

    # ------------------------------------------------------------------ the link thread

    def _run(self) -> None:
        announced_unavailable = False
        while not self._stop.is_set():
            try:
                client = Client(daemon_socket(self.workspace), timeout=10.0)
            except OSError as exc:
                if not announced_unavailable:
                    self._deliver(LinkEvent("unavailable", str(exc)))
                    announced_unavailable = True
                self._stop.wait(RETRY_S)
                continue
            announced_unavailable = False
            self._client = client
            try:
                self._serve(client)
            except (OSError, ConnectionClosed, ProtocolError, TimeoutError, ValueError) as exc:
                if not self._stop.is_set():
                    state = "stopped" if self._stopping else "disconnected"
                    self._deliver(LinkEvent(state, str(exc) or type(exc).__name__))
            finally:
                self.connected = False
                self._client = None
                client.close()
            self._stop.wait(RETRY_S)

    def _serve(self, client: Client) -> None:
        hello = Hello(client=CLIENT_NAME, subscribe=True, records=RecordSet.DYNAMIC).to_wire()
        welcome = parse_daemon_message(client.ask(hello))
        if isinstance(welcome, Error):
            raise ProtocolError(welcome.code, welcome.message)
        if not isinstance(welcome, Welcome):
            raise ProtocolError("malformed", f"the daemon answered `hello` with {type(welcome).__name__}")
        self.connected = True
        self._stopping = False
        self._deliver(LinkEvent("connected", welcome=welcome))
        results = parse_daemon_message(client.request(Results.TYPE))
        if isinstance(results, Results):
            for report in results.reports:
                self._deliver(Result(report))
        for pushed in client.pushes:
            self._pass_on(pushed)
        client.pushes.clear()
        while not self._stop.is_set():
            try:
                message = client.recv(timeout=0.5)
            except TimeoutError:
                continue
            self._pass_on(message)

    def _pass_on(self, data: Mapping[str, Any]) -> None:
        """One message from the daemon, typed, to ``deliver``; one that breaks the schema is
        logged and dropped (the link and the server go on)."""
        try:
            message = parse_daemon_message(data)
        except MalformedMessage as exc:
            log.warning("dropped a message from the daemon of %s: %s", self.workspace, exc.message)
            return
        self._deliver(message)
