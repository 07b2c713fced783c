"""The server and a real daemon: started from the editor, results pushed back as diagnostics,
progress while it works, a warning when it dies, a clean stop."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from lsp_helpers import Document, daemon_states, wait_published
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server_documents import copy_example

DAEMON_TIMEOUT_S = 180.0


async def execute(client: LanguageClient, command: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(arguments))
    )


async def wait_state(client: LanguageClient, state: str, timeout: float = DAEMON_TIMEOUT_S) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        for seen in daemon_states(client):
            if seen["state"] == state:
                return seen
        await asyncio.sleep(0.05)
    raise TimeoutError(f"no daemon state {state!r}; seen {[s['state'] for s in daemon_states(client)]}")


async def test_daemon_results_become_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness.runtime]\nbench = false\n")
    # trust comes from the editor's settings, never from the workspace's own pyproject
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"warpHarness": {"trust": True}})
    )
    doc = Document(client, copy_example(tmp_path, "contracts/boundary_bug.py")).open()
    assert await doc.diagnostics() == []

    reply = await execute(client, "warp-harness.startDaemon", tmp_path.as_uri())
    assert reply is not None
    await wait_state(client, "idle")
    doc.save()
    _, diagnostics = await wait_published(
        client, doc.uri, lambda v, d: any(x.source == "warp-harness daemon" for x in d), DAEMON_TIMEOUT_S
    )
    dynamic = [d for d in diagnostics if d.source == "warp-harness daemon"]
    unwritten = next(d for d in dynamic if d.code == "WHD021")
    assert unwritten.data["tier"] == "dynamic" and unwritten.data["location"]["kernel"] == "shift_add"
    assert unwritten.code_description is not None
    assert unwritten.code_description.href.endswith("docs/rules.md#whd021")
    assert "boundary" in unwritten.message
    seen = {s["state"] for s in daemon_states(client)}
    assert {"starting", "idle", "validating"} <= seen, seen
    # work-done progress: begun and ended for a job. The daemon's first pass may have checked the
    # file before the server's link connected (and this save's text is the one it checked): a save
    # of a new text runs a job the server sees from its start.
    end = len(doc.text.splitlines())
    doc.replace(end, 0, end, 0, "# saved again\n")
    doc.save()
    for _ in range(int(DAEMON_TIMEOUT_S / 0.05)):
        kinds = [type(v).__name__ for reports in client.progress_reports.values() for v in reports]
        if "WorkDoneProgressBegin" in kinds and "WorkDoneProgressEnd" in kinds:
            break
        await asyncio.sleep(0.05)
    assert "WorkDoneProgressBegin" in kinds and "WorkDoneProgressEnd" in kinds

    lines = doc.text.splitlines()
    at = next(i for i, t in enumerate(lines) if t.startswith("def shift_add"))
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri), position=types.Position(at, 6)
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "validate: cpu: fail" in hover.contents.value

    # the daemon dies: a warning, the static tier goes on
    pid = json.loads((tmp_path / ".warp-harness" / "daemon.json").read_text())["pid"]
    os.kill(pid, signal.SIGKILL)
    await wait_state(client, "failed")
    for _ in range(200):
        if any("lost the connection to the daemon" in m.message for m in client.messages):
            break
        await asyncio.sleep(0.05)
    assert any(
        m.type == types.MessageType.Warning and "lost the connection to the daemon" in m.message
        for m in client.messages
    )
    doc.replace(0, 0, 0, 0, "# edited\n")
    assert all(d.source == "warp-harness daemon" or d.code for d in await doc.diagnostics())

    # started again and stopped cleanly: no warning this time
    daemon_states(client).clear()
    await execute(client, "warp-harness.startDaemon")
    await wait_state(client, "idle")
    warnings = len(client.messages)
    reply = await execute(client, "warp-harness.stopDaemon")
    await wait_state(client, "off")
    assert len(client.messages) == warnings, (client.messages, daemon_states(client))
    assert not (tmp_path / ".warp-harness" / "daemon.json").exists()
