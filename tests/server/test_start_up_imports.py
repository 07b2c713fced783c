"""What the server has imported when it answers `initialize` (issue 34: first diagnostics within 100 ms of
an empty pygls server's): what an empty pygls server imports by then, and of warp-harness only the server's
start and what handling the first document takes. The analysis stack is the start-up process's; code
actions, hovers, stored cases and the daemon's messages import their modules at their first request."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from stdio_client import StdioClient

from warp_harness.launch import module_command

# an empty pygls server, as benchmarks/bench_lsp.py's floor, that tells what it had imported at `initialize`
FLOOR = """
import sys
from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("floor", "0")
at_initialize = []


@server.feature(types.INITIALIZE)
def initialize(ls, params):
    at_initialize.extend(sys.modules)


@server.feature("floor/modules")
def modules(ls, params):
    return sorted(at_initialize)


server.start_io()
"""
# warp-harness modules the reply may wait for: the command line's way to `serve`, the server and its state,
# the start-up process's parent end, and what the first document's handling and publication import
ALLOWED = {
    "warp_harness",
    "warp_harness.cli",
    "warp_harness.config",
    "warp_harness.record",
    "warp_harness.safe_read",
    "warp_harness.tunables",
    "warp_harness.server",
    "warp_harness.server.analyses",
    "warp_harness.server.analysis",
    "warp_harness.server.app",
    "warp_harness.server.cli",
    "warp_harness.server.collector",
    "warp_harness.server.convert",
    "warp_harness.server.daemon_control",
    "warp_harness.server.documents",
    "warp_harness.server.generated_code",
    "warp_harness.server.lines",
    "warp_harness.server.notebooks",
    "warp_harness.server.options",
    "warp_harness.server.publishing",
    "warp_harness.server.pull",
    "warp_harness.server.result_ids",
    "warp_harness.server.session",
    "warp_harness.server.start_up_process",
    "warp_harness.server.text_document",
    "warp_harness.server.transport",
    "warp_harness.server.tuning",
    "warp_harness.server.worker",
}
# the other modules it may have and the floor not: `python -m`'s runner and what it imports (importlib.util:
# the floor has it too only where an editable install's path hook imported it at start), the collector's
# switch, and what server/lines.py cuts a document's lines with
STDLIB_EXTRA = {"runpy", "importlib.util", "importlib._abc", "importlib.machinery", "gc", "bisect", "_bisect"}


def _modules_at_initialize(command: list[str], method: str, root: Path) -> set[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(root / "cache")}
    client = StdioClient(command, root, env=env)
    try:
        client.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
        client.notify("initialized", {})
        reply = client.request(method, {})
    finally:
        client.close()
    modules = reply["imported_at_initialize"] if isinstance(reply, dict) else reply
    return set(modules)


def test_the_reply_to_initialize_waits_for_no_more_than_an_empty_pygls_server_and_the_server(
    tmp_path: Path,
) -> None:
    floor_script = tmp_path / "floor.py"
    floor_script.write_text(FLOOR)
    floor = _modules_at_initialize([sys.executable, str(floor_script)], "floor/modules", tmp_path)
    serve = module_command("warp_harness", "serve")
    ours = _modules_at_initialize(serve, "warp-harness/serverInfo", tmp_path)
    assert "lsprotocol.types" in floor and "lsprotocol.types" in ours  # both at their reply, for real
    extra = ours - floor
    assert sorted(m for m in extra if m.startswith("warp_harness") and m not in ALLOWED) == []
    assert sorted(m for m in extra if not m.startswith("warp_harness") and m not in STDLIB_EXTRA) == []
    # what the start-up process and later requests import, named: nothing of it came before the reply
    for later in ("warp_harness.engine", "warp_harness.rules", "warp_harness.model", "warp_harness.output"):
        assert not any(m == later or m.startswith(later + ".") for m in ours), later
    for later in ("actions", "hover", "replay_actions", "daemon_results", "daemon_link"):
        assert f"warp_harness.server.{later}" not in ours
    assert not {"argparse", "pickle", "warp", "numpy"} & ours
