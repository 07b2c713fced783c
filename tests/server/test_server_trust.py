"""The language server never executes workspace code: not the modules it checks, not modules
that shadow the standard library next to where the editor starts it."""

from __future__ import annotations

import queue
import sys
import time
from pathlib import Path

from stdio_client import StdioClient
from test_server_documents import EXAMPLES

SHADOWS = ("json", "msgpack", "ast", "tomllib", "lsprotocol", "pygls", "warp")


def marked_workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace ``ws`` whose kernel module leaves a file in ``markers`` if it is ever imported."""
    ws, markers = tmp_path / "ws", tmp_path / "markers"
    ws.mkdir()
    markers.mkdir()
    kernel = ws / "kernels.py"
    kernel.write_text(
        f"open({str(markers / 'kernels')!r}, 'w').close()\n" + (EXAMPLES / "saxpy.py").read_text()
    )
    return ws, markers, kernel


def test_served_from_inside_an_untrusted_workspace_runs_none_of_it(tmp_path: Path) -> None:
    ws, markers, kernel = marked_workspace(tmp_path)
    for name in SHADOWS:
        (ws / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    # the way editors start it: `python -m ...` with the workspace as the current folder
    client = StdioClient([sys.executable, "-m", "warp_harness", "serve"], ws)
    try:
        client.initialize(ws)
        uri = kernel.as_uri()
        text = kernel.read_text()
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        _, diagnostics = client.wait_diagnostics(uri, 1)
        assert diagnostics == []
        info = client.request("warp-harness/serverInfo", {})
        assert info["warp_imported"] is False
        # asking for a daemon in an untrusted workspace starts one that runs nothing either
        client.request("workspace/executeCommand", {"command": "warp-harness.startDaemon", "arguments": []})
        client.request("workspace/executeCommand", {"command": "warp-harness.stopDaemon", "arguments": []})
    finally:
        client.close()
    assert sorted(p.name for p in markers.iterdir()) == []


def test_a_workspace_cannot_trust_itself(tmp_path: Path) -> None:
    """`trust = true` in the workspace's pyproject.toml (a cloned repository can say so) does not
    make the server start a trusted daemon: only the editor's own settings can."""
    ws, markers, kernel = marked_workspace(tmp_path)
    (ws / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = true\ndaemon = true\n")
    client = StdioClient([sys.executable, "-m", "warp_harness", "serve"], tmp_path)
    try:
        client.initialize(ws)
        reply = client.request(
            "workspace/executeCommand", {"command": "warp-harness.startDaemon", "arguments": [str(ws)]}
        )
        assert reply.get("error") is None, reply
        states = []
        deadline = time.monotonic() + 60
        while "untrusted" not in states and "idle" not in states and time.monotonic() < deadline:
            try:
                _, note = client.notifications.get(timeout=1)
            except queue.Empty:
                continue
            if note.get("method") == "warp-harness/daemonState":
                states.append(note["params"]["state"])
        assert "untrusted" in states and "idle" not in states, states
        kernel.write_text(kernel.read_text() + "\n# saved\n")  # a save the daemon sees
        client.notify("textDocument/didSave", {"textDocument": {"uri": kernel.as_uri()}})
        time.sleep(1.0)
        client.request(
            "workspace/executeCommand", {"command": "warp-harness.stopDaemon", "arguments": [str(ws)]}
        )
    finally:
        client.close()
    assert sorted(p.name for p in markers.iterdir()) == []
