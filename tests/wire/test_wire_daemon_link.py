"""The schema between a real daemon and its clients: the language server's link asks for the dynamic
records only and gets typed messages; a client that asks for nothing gets every record, as before; a
daemon message that breaks the schema is dropped and the link goes on."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from warp_harness.daemon.server import Daemon, DaemonThread
from warp_harness.server.daemon_link import DaemonLink, LinkEvent
from warp_harness.wire import framing
from warp_harness.wire.location import socket_path_for
from warp_harness.wire.messages import (
    DaemonMessage,
    Hello,
    Removed,
    Result,
    StateChange,
    parse_daemon_message,
)
from warp_harness.wire.statuses import JobState, RecordSet, Status, Tier

REPO = Path(__file__).resolve().parents[2]
# a module with static findings (WH003, WH004); untrusted, so nothing of it runs and the daemon's one
# dynamic record is WHD050 (the workspace is not trusted)
BUGGY = REPO / "examples" / "buggy" / "mixed_precision.py"


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private runtime folder of the test's own, where the daemon's socket and state live."""
    folder = tmp_path / "rt"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder


@pytest.fixture
def daemon(tmp_path: Path, runtime: Path) -> Iterator[tuple[Path, DaemonThread]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(BUGGY, ws / "k.py")
    thread = DaemonThread(Daemon(ws, trust=False, log=lambda s: None, debounce_ms=50)).start()
    yield ws, thread
    thread.stop()


def _wait(found: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError("not seen in time")


def test_the_dynamic_record_set_leaves_out_what_the_server_has(daemon: tuple[Path, DaemonThread]) -> None:
    _, t = daemon
    with framing.Client(t.daemon.socket_path) as everything, framing.Client(t.daemon.socket_path) as lsp:
        welcome = everything.request("hello", client="script")
        assert "records:dynamic" in welcome["capabilities"]
        lsp.ask(Hello("lsp", records=RecordSet.DYNAMIC).to_wire())
        reply = everything.request("check", path="k.py")
        full = everything.wait_push("result", timeout=60, where={"path": "k.py"})
        only = lsp.wait_push("result", timeout=60, where={"path": "k.py"})
        tiers = [r["tier"] for r in full["records"]]
        assert "static" in tiers and "dynamic" in tiers
        assert {r["rule"] for r in full["records"] if r["tier"] == "static"} >= {"WH003", "WH004"}
        assert reply["records"] == full["records"]  # the reply to a plain client: unchanged
        assert [r["tier"] for r in only["records"]] == ["dynamic"]
        assert only["records"] == [r for r in full["records"] if r["tier"] == "dynamic"]
        assert {k: v for k, v in only.items() if k != "records"} == {
            k: v for k, v in full.items() if k != "records"
        }
        # `results` answers each connection with its own record set
        assert lsp.request("results")["results"] == [
            {k: v for k, v in only.items() if k not in ("v", "type", "push")}
        ]
        assert everything.request("results")["results"][0]["records"] == full["records"]
        typed = parse_daemon_message(only)
        assert isinstance(typed, Result) and typed.report.status is Status.UNTRUSTED
        assert [r.tier for r in typed.report.records] == [Tier.DYNAMIC]


def test_the_link_delivers_typed_messages(daemon: tuple[Path, DaemonThread]) -> None:
    ws, _ = daemon
    got: list[LinkEvent | DaemonMessage] = []
    link = DaemonLink(ws, got.append)
    link.start()
    try:
        event = _wait(lambda: next((m for m in got if isinstance(m, LinkEvent)), None))
        assert event.state == "connected" and event.welcome is not None and event.welcome.trusted is False
        (ws / "k.py").write_text(BUGGY.read_text() + "\n# saved\n")  # a real save
        result = _wait(lambda: next((m for m in got if isinstance(m, Result)), None))
        assert result.report.path == "k.py" and result.report.status is Status.UNTRUSTED
        assert [r.record.rule for r in result.report.records] == ["WHD050"]  # no static record sent
        states = [m.state for m in got if isinstance(m, StateChange)]
        assert JobState.RUNNING in states
        (ws / "k.py").unlink()
        assert _wait(lambda: [m for m in got if isinstance(m, Removed)]) == [Removed("k.py")]
    finally:
        link.close()


def _fake_daemon(path: Path, pushes: list[dict[str, Any]], served: threading.Event) -> None:
    """A daemon of one connection that answers hello and results, then sends ``pushes``."""
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        os.chmod(path, 0o600)
        server.listen(1)
        server.settimeout(30)
        conn, _ = server.accept()
        with conn:
            for _ in range(2):
                request = framing.recv_message(conn, timeout=10)
                if request["type"] == "hello":
                    reply = framing.message(
                        "welcome", server="fake", version="0", protocol=1, supported=[1],
                        workspace="w", trusted=True, max_frame=framing.MAX_FRAME, capabilities=[],
                    )  # fmt: skip
                else:
                    reply = framing.message("results", results=[])
                framing.send_message(conn, {**reply, "id": request["id"]})
            for push in pushes:
                framing.send_message(conn, push)
            served.wait(30)


def test_a_message_that_breaks_the_schema_is_dropped_and_the_link_goes_on(
    tmp_path: Path, runtime: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    sock = socket_path_for(ws)
    good = framing.message("removed", push=True, path="a.py")
    pushes = [
        framing.message("result", push=True, path="a.py", records="not a list"),
        framing.message("state", push=True, path="a.py", state="dreaming"),
        framing.message("result", push=True, path=["a.py"]),
        good,
    ]
    served = threading.Event()
    fake = threading.Thread(target=_fake_daemon, args=(sock, pushes, served), daemon=True)
    fake.start()
    _wait(sock.exists, 10)
    got: list[LinkEvent | DaemonMessage] = []
    link = DaemonLink(ws, got.append)
    link.start()
    try:
        assert _wait(lambda: [m for m in got if isinstance(m, Removed)]) == [Removed("a.py")]
        assert [type(m).__name__ for m in got] == ["LinkEvent", "Removed"]
        assert link.connected
    finally:
        served.set()
        link.close()
        fake.join(10)
