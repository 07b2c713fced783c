"""What the server imports on its way to the first diagnostics (issue 15: start-up to first diagnostics
within 100 ms of an empty pygls server's). Modules only some requests need (TCP's token, pulled
diagnostics' digests, "did you mean" suggestions, package-data readers) are imported when used."""

from __future__ import annotations

import queue
import sys
import time
from pathlib import Path

from first_analysis import first_analysis
from stdio_client import StdioClient

from warp_harness.launch import module_command

# stdlib modules no step to the first diagnostics of a stdio client needs
DEFERRED = ("importlib.resources", "zipfile", "secrets", "hmac", "difflib")
PUBLISH = "textDocument/publishDiagnostics"
DAEMON_STATE = "warp-harness/daemonState"


def test_the_first_analysis_imports_nothing_only_other_requests_need(tmp_path: Path) -> None:
    modules = first_analysis(tmp_path)["modules"]
    assert [m for m in DEFERRED if m in modules] == []


def test_the_deferred_modules_are_there_when_their_requests_come() -> None:
    from warp_harness.builtins import load_table
    from warp_harness.hardware import bundled_profiles, load_profile
    from warp_harness.server import pull, transport

    assert "sqrt" in load_table().closest("sqr")
    assert "sm_86" in bundled_profiles() and load_profile("sm86").name == "sm_86"
    assert len(pull.result_id([], 1)) == 20
    assert transport.authenticate({"method": "initialize", "id": 1, "params": {}}, "token") is not None
    assert sys.modules.get("difflib") is not None


def _notifications_until(client: StdioClient, method: str, timeout: float = 60.0) -> list[str]:
    """The methods of the server's notifications, in order, up to the first ``method`` one."""
    methods: list[str] = []
    deadline = time.monotonic() + timeout
    while method not in methods and time.monotonic() < deadline:
        try:
            _, note = client.notifications.get(timeout=1)
        except queue.Empty:
            continue
        methods.append(str(note.get("method")))
    return methods


def test_the_daemon_links_start_after_the_first_diagnostics(tmp_path: Path) -> None:
    """The first diagnostics do not wait for the daemon link (the daemon protocol's imports, a thread, a
    connection attempt): the link's `daemonState` (no daemon runs here) follows them."""
    source = tmp_path / "k.py"
    source.write_text("import warp as wp\n\n@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = 1.0\n")
    client = StdioClient(module_command("warp_harness", "serve"), tmp_path)
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}})
        opened = {"uri": source.as_uri(), "languageId": "python", "version": 1, "text": source.read_text()}
        # together, as an editor sends them: the order holds however the test process is scheduled
        client.notify_at_once(("initialized", {}), ("textDocument/didOpen", {"textDocument": opened}))
        methods = _notifications_until(client, DAEMON_STATE)
    finally:
        client.close()
    assert PUBLISH in methods and DAEMON_STATE in methods, methods
    assert methods.index(PUBLISH) < methods.index(DAEMON_STATE), methods


def test_without_documents_the_daemon_links_start_once_start_up_is_over(tmp_path: Path) -> None:
    client = StdioClient(module_command("warp_harness", "serve"), tmp_path)
    try:
        client.initialize(tmp_path)
        methods = _notifications_until(client, DAEMON_STATE)
    finally:
        client.close()
    assert methods[-1:] == [DAEMON_STATE], methods
