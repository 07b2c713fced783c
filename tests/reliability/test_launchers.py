"""Every launcher of ours starts Python without importing from its current folder (issue 12, item 1).

`cd WS && python -m warp_harness serve` imports a workspace `warp_harness/` package, and on an
installation whose site start-up has not imported them yet `contextlib.py`, `functools.py`,
`types.py`, while runpy starts: before `warp_harness/__main__.py` can drop the current folder. Each test
starts a real process the way the product does it, from a folder with such files, each of which
leaves a marker file when imported, and checks that no marker appears:

- the VS Code extension's interpreter launch (`INTERPRETER_ARGS` read from its source) and the
  `warp-harness` console script it finds on PATH, the workspace as the current folder, with an
  LSP initialize / shutdown;
- the editor set-up in docs/editors.md that uses `python -m`;
- the server's daemon (`DaemonLink.spawn_daemon`, the real function) started in a hostile folder;
- the daemon's worker (`Supervisor.start`, the real `WorkerProcess` command, cwd = the workspace).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_helpers import wait_for

from warp_harness.daemon import protocol as P
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.supervisor import Supervisor
from warp_harness.launch import module_command
from warp_harness.server.daemon_link import DaemonLink

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "server"))
from stdio_client import StdioClient  # noqa: E402

SHADOWS = ("contextlib", "functools", "types")


def plant(folder: Path, markers: Path) -> None:
    """Modules that leave ``markers/<name>`` when imported (builtins only: they shadow the stdlib)."""
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    package = folder / "warp_harness"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(markers / 'warp_harness')!r}, 'w').close()\n")
    (package / "__main__.py").write_text(f"open({str(markers / 'warp_harness.__main__')!r}, 'w').close()\n")


def hostile(tmp_path: Path) -> tuple[Path, Path]:
    ws, markers = tmp_path / "ws", tmp_path / "markers"
    ws.mkdir()
    markers.mkdir()
    plant(ws, markers)
    return ws, markers


def fired(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def extension_interpreter_args() -> list[str]:
    """The arguments the VS Code extension gives `warpHarness.server.interpreter`."""
    source = (REPO / "vscode-client" / "src" / "command.ts").read_text(encoding="utf-8")
    found = re.search(r"export const INTERPRETER_ARGS = (\[[^\]]*\]);", source)
    assert found, "INTERPRETER_ARGS not found in vscode-client/src/command.ts"
    args: list[str] = json.loads(found.group(1))
    return args


def docs_python_commands() -> list[list[str]]:
    """Every Lua `cmd = { "...python", ... "warp_harness", "serve" }` in docs/editors.md."""
    text = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    commands = []
    for table in re.findall(r"\{([^{}]*\"warp_harness\"[^{}]*)\}", text):
        words = re.findall(r'"([^"]*)"', table)
        if "-m" in words and words[-1] == "serve":
            commands.append(words)
    return commands


def lsp_round_trip(command: list[str], ws: Path, markers: Path) -> None:
    """initialize, shutdown, exit: the server really ran."""
    client = StdioClient(command, ws)
    try:
        try:
            result = client.initialize(ws)
        except TimeoutError:
            code = client.proc.poll()
            raise AssertionError(
                f"no answer to initialize (exit code {code}); ran: {fired(markers)}"
            ) from None
        assert result["serverInfo"]["name"] == "warp-harness"
        client.request("shutdown", None)
        client.notify("exit", None)
        assert client.proc.wait(timeout=30) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
        client.proc.wait(timeout=30)


def test_the_planted_folder_runs_under_a_plain_python_m(tmp_path: Path) -> None:
    """The attack is live: the old command line (`python -m warp_harness`) runs workspace code: the
    planted package under an editable install (whose .pth imports contextlib first), the planted
    `contextlib.py` under a regular one (runpy imports it before the package)."""
    ws, markers = hostile(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "warp_harness", "--version"], cwd=ws, capture_output=True, timeout=60
    )
    assert {"warp_harness", "contextlib"} & set(fired(markers)), fired(markers)


def test_the_extensions_interpreter_launch_imports_nothing_from_the_workspace(tmp_path: Path) -> None:
    ws, markers = hostile(tmp_path)
    args = extension_interpreter_args()
    assert args[-3:] == ["-m", "warp_harness", "serve"]
    lsp_round_trip([sys.executable, *args], ws, markers)
    assert fired(markers) == []


def test_the_console_script_imports_nothing_from_the_workspace(tmp_path: Path) -> None:
    """`warp-harness serve` (what the extension finds on PATH): its sys.path[0] is its own folder."""
    script = Path(sys.executable).with_name("warp-harness")
    if not script.exists():
        pytest.skip("no warp-harness script beside this interpreter")
    ws, markers = hostile(tmp_path)
    lsp_round_trip([str(script), "serve"], ws, markers)
    assert fired(markers) == []


def test_the_docs_editor_setups_start_python_isolated(tmp_path: Path) -> None:
    commands = docs_python_commands()
    assert commands, "no `python -m warp_harness` command line found in docs/editors.md"
    ws, markers = hostile(tmp_path)
    for command in commands:
        assert command[1] in ("-I", "-P"), command
        lsp_round_trip([sys.executable, *command[1:]], ws, markers)
        assert fired(markers) == []


def test_module_command_keeps_the_current_folder_off_sys_path(tmp_path: Path) -> None:
    ws, markers = hostile(tmp_path)
    command = [*module_command("warp_harness", "--version")]
    done = subprocess.run(command, cwd=ws, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert fired(markers) == []


def test_the_servers_daemon_imports_nothing_from_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`DaemonLink.spawn_daemon` starts the daemon in the private runtime folder; planted there,
    the modules show that the command line itself is isolated, whatever its folder."""
    ws, markers = tmp_path / "ws", tmp_path / "markers"
    ws.mkdir()
    markers.mkdir()
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    runtime = P.ensure_private_dir(P.runtime_dir())
    plant(runtime, markers)
    link = DaemonLink(ws, lambda message: None)
    try:
        assert link.spawn_daemon(trust=False) == "starting"
        sock = P.socket_path_for(ws)

        def answers() -> bool:
            if link._process is not None and link._process.poll() is not None:
                raise AssertionError(f"the daemon exited with {link._process.returncode}: {fired(markers)}")
            try:
                with P.Client(sock, timeout=5) as client:
                    client.request("ping")
                return True
            except (OSError, P.ConnectionClosed, P.ProtocolError):
                return False

        wait_for(answers, 60, "the daemon's socket")
        assert link.stop_daemon()
    finally:
        link.close()
        process = link._process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, 9)
    assert fired(markers) == []


def test_the_daemons_worker_imports_nothing_from_the_workspace(tmp_path: Path) -> None:
    """The worker runs with the workspace as its current folder (a trusted one: it executes its
    kernels later, on purpose), but Python's start-up must not import from it."""
    ws, markers = hostile(tmp_path)
    with Supervisor(ws, RuntimeOptions(), warmup=False) as supervisor:
        worker = supervisor.start()
        assert worker.alive()
    assert fired(markers) == []
