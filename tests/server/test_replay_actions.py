"""Accepting a replayed launch's new behaviour from the editor (issue #31): the code actions on a
behaviour-diff diagnostic, and the `warp-harness.accept` command's request to the daemon.

The daemon here is a real socket peer speaking the daemon protocol (frames of daemon/protocol.py on the
workspace's socket), not a real daemon: the test asserts the exact request the server sends and answers
it as the daemon's `accept` does, without capturing and replaying kernels. The server itself is the real
`warp-harness serve` over stdio.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import Document, plain, wait_published
from lsprotocol import types
from pytest_lsp import LanguageClient

from warp_harness.daemon import findings
from warp_harness.daemon.protocol import (
    ConnectionClosed,
    ProtocolError,
    error_message,
    message,
    packb,
    recv_message,
    send_message,
    socket_path_for,
)
from warp_harness.record import Severity, Stage

KERNEL = """import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 3.0 * x[i]
"""
DIFF = "`scale`: 4 of 4 elements of `y` differ from the accepted baseline (max abs error 1)"
BOUNDS = "`scale`: out-of-bounds read of `x` at index 4 (extent 4)"
CASE = ".warp-harness/repros/k__scale__0123456789ab.msgpack"


class DaemonPeer:
    """A socket peer on the workspace's daemon socket: answers `hello`, `results` and `accept` as the
    daemon does, pushes one result once a client subscribed, and keeps every request it received."""

    def __init__(self, workspace: Path, result: dict[str, Any]) -> None:
        self.workspace = workspace.resolve()
        self.result = result
        self.requests: list[dict[str, Any]] = []
        self.path = socket_path_for(self.workspace)
        self.path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    msg = recv_message(conn)
                except (ConnectionClosed, ProtocolError, OSError):
                    return
                self.requests.append(msg)
                kind, request_id = msg.get("type"), msg.get("id")
                if kind == "hello":
                    reply = message("welcome", id=request_id, workspace=str(self.workspace), trusted=True)
                elif kind == "results":
                    reply = message("results", id=request_id, results=[])
                elif kind == "accept":
                    # the reply of the daemon's `accept` (docs/protocol.md)
                    launches = [{"kernel": "scale", "id": lid, "dim": [4], "device": "cpu"} for lid in "ab"]
                    reply = message(
                        "accepted",
                        id=request_id,
                        path="k.py",
                        kernel=msg.get("kernel"),
                        accepted=len(launches),
                        launches=launches,
                        records=[],
                    )
                else:
                    reply = error_message("unknown-type", f"unknown message type {kind!r}", request_id)
                send_message(conn, reply)
                if kind == "results":  # a save's result, pushed to the subscribed link
                    send_message(conn, message("result", **self.result))

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


def _record(rule: str, text: str, line: int) -> dict[str, Any]:
    record = findings.make_record(Stage.NUMERIC, rule, Severity.WARNING, "k.py", line, text, kernel="scale")
    return {**record.to_dict(), "tier": "dynamic"}


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[DaemonPeer]:
    (tmp_path / "k.py").write_text(KERNEL)
    case = tmp_path / CASE
    case.parent.mkdir(parents=True)
    case.write_bytes(
        packb(
            {
                "schema": 1,
                "path": "k.py",
                "kernel": "scale",
                "device": "cpu",
                "rule": "WHD082",
                "message": DIFF,
                "kind": "captured",
                "edge_case": "captured launch 0123",
            }
        )
    )
    result = {
        "path": "k.py",
        "trusted": True,
        "status": "fail",
        "records": [_record(findings.BEHAVIOUR_CHANGED, DIFF, 4), _record(findings.REPLAY_BOUNDS, BOUNDS, 7)],
        "kernels": {},
        "repros": [CASE, "../outside.msgpack"],
    }
    found = DaemonPeer(tmp_path, result)
    yield found
    found.close()


def tell_code_actions_from_commands(client: LanguageClient) -> None:
    """lsprotocol structures every code action that has a `command` as a `Command` (its hook looks only
    for the key); editors tell them apart by the command's type (VS Code: a string is a `Command`).
    The test's client does the same."""
    converter = client.protocol._converter

    def structure(obj: Any, _: type) -> types.Command | types.CodeAction:
        kind = types.Command if isinstance(obj.get("command"), str) else types.CodeAction
        found: types.Command | types.CodeAction = converter.structure(obj, kind)
        return found

    converter.register_structure_hook(types.Command | types.CodeAction, structure)


async def _dynamic(doc: Document) -> list[types.Diagnostic]:
    _, diagnostics = await wait_published(
        doc.client, doc.uri, lambda v, d: any(x.source == "warp-harness daemon" for x in d), 30.0
    )
    return [d for d in diagnostics if d.source == "warp-harness daemon"]


async def test_a_behaviour_diff_is_accepted_through_the_daemon(
    client: LanguageClient, tmp_path: Path, peer: DaemonPeer
) -> None:
    tell_code_actions_from_commands(client)
    doc = Document(client, tmp_path / "k.py").open()
    dynamic = await _dynamic(doc)
    diff = next(d for d in dynamic if d.code == "WHD082")
    bounds = next(d for d in dynamic if d.code == "WHD080")

    titles = [a.title for a in await doc.actions([diff])]
    assert titles == ["Accept the new behaviour of scale", "Open the stored case"]
    # an out-of-bounds read is no behaviour to accept, and no case of it was stored
    assert await doc.actions([bounds]) == []
    # a diagnostic the server does not show (its data changed, or made up by the client) gets nothing
    forged = types.Diagnostic(diff.range, diff.message, code=diff.code, data={**diff.data, "message": "x"})
    assert await doc.actions([forged]) == []

    accept = (await doc.actions([diff]))[0]
    assert accept.command is not None and accept.command.command == "warp-harness.accept"
    reply = plain(
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=accept.command.command, arguments=accept.command.arguments)
        )
    )
    sent = [r for r in peer.requests if r.get("type") == "accept"]
    assert [{k: r[k] for k in ("type", "path", "kernel")} for r in sent] == [
        {"type": "accept", "path": str((tmp_path / "k.py").resolve()), "kernel": "scale"}
    ]
    assert reply["accepted"] == 2
    shown = [m for m in client.messages if "accepted the new behaviour of scale" in m.message]
    assert [(m.type, m.message) for m in shown] == [
        (types.MessageType.Info, "warp-harness: accepted the new behaviour of scale (2 launches)")
    ]

    case = (await doc.actions([diff]))[1]
    assert case.command is not None and list(case.command.arguments or []) == [
        str((tmp_path / CASE).resolve())
    ]
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=case.command.command, arguments=case.command.arguments)
    )
    for _ in range(100):
        if client.shown_documents:
            break
        await asyncio.sleep(0.05)
    assert [d.uri for d in client.shown_documents] == [(tmp_path / CASE).resolve().as_uri()]
    # only a case the daemon listed opens: the command's argument comes from the client
    before = len(client.shown_documents)
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=case.command.command, arguments=[str(tmp_path / "k.py")])
    )
    assert len(client.shown_documents) == before
    assert any("is not a stored case" in m.message for m in client.messages)


async def test_accept_without_a_daemon_says_so(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\ndaemon = false\n")
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    reply = plain(
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="warp-harness.accept", arguments=[str(path), "scale"])
        )
    )
    assert reply["accepted"] == 0 and "no daemon is connected" in reply["message"]
    assert [m.type for m in client.messages if "no daemon is connected" in m.message] == [
        types.MessageType.Warning
    ]
