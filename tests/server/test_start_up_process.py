"""The start-up process (server/start_up_process.py): a real `warp-harness serve` over stdio forks it, its
answer is the first diagnostics of a document opened at start-up, the same as the server's own; it is gone
once start-up is over, and when the server dies; killed, the server publishes its own diagnostics."""

from __future__ import annotations

import asyncio
import os
import pickle
import queue
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stdio_client import StdioClient
from test_workspace_model import KERNELS  # the kernel module the cross-module launch resolves into

from warp_harness.launch import module_command
from warp_harness.server.start_up_process import StartUpProcess

PUBLISH = "textDocument/publishDiagnostics"
# a builtin called wrongly, a launch of a kernel of another module (judged through the workspace model)
# and a launch with one argument too many
SIM = """import warp as wp

from . import kernels as K


@wp.kernel
def local(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = wp.sqrt()


class Sim:
    def step(self, a, n, m):
        wp.launch(K.scale, dim=(n, m), inputs=[a, 2.0])
        wp.launch(local, dim=n, inputs=[a, 1.0])
"""


@pytest.fixture
def sim(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernels.py").write_text(KERNELS)
    (package / "sim.py").write_text(SIM)
    return package / "sim.py"


def _serve(root: Path, *flags: str) -> StdioClient:
    return StdioClient([*module_command("warp_harness", "serve"), *flags], root)


def _open_at_start_up(
    client: StdioClient, root: Path, source: Path, then: Callable[[], None] = lambda: None
) -> list[dict[str, Any]]:
    """Initialize, open ``source`` as an editor does at start-up (``then``...); its first diagnostics."""
    client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}},
        },
    )
    opened = {"uri": source.as_uri(), "languageId": "python", "version": 1, "text": source.read_text()}
    client.notify_at_once(("initialized", {}), ("textDocument/didOpen", {"textDocument": opened}))
    then()
    return client.wait_diagnostics(source.as_uri(), 1, timeout=60)[1]


def _publications(client: StdioClient, uri: str) -> list[dict[str, Any]]:
    """The publications for ``uri`` received (and not yet taken) so far."""
    found = []
    while True:
        try:
            _, note = client.notifications.get_nowait()
        except queue.Empty:
            return found
        if note.get("method") == PUBLISH and note["params"]["uri"] == uri:
            found.append(note["params"])


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _start_up_pid(server: int) -> int:
    """The start-up process of a server just started (its only child then)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = _children(server)
        if children:
            return children[0]
        time.sleep(0.005)
    raise AssertionError("no start-up process was forked")


def _ended(pid: int, timeout: float = 10.0) -> bool:
    """The process is gone (or a zombie its new parent has yet to reap: not running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


def _in_process_diagnostics(root: Path, source: Path) -> list[dict[str, Any]]:
    client = _serve(root, "--no-start-up-process")
    try:
        diagnostics = _open_at_start_up(client, root, source)
        assert client.request("warp-harness/serverInfo", None)["start_up"]["pid"] is None
        return diagnostics
    finally:
        client.close()


def _hover_kernel(client: StdioClient, uri: str) -> Any:
    position = {"line": SIM.splitlines().index("def local(a: wp.array(dtype=float)):"), "character": 5}
    return client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": position})


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here: the server analyses in process")
def test_the_first_diagnostics_come_from_the_start_up_process_and_are_the_servers_own(
    tmp_path: Path, sim: Path
) -> None:
    expected = _in_process_diagnostics(tmp_path, sim)
    assert {d["code"] for d in expected} == {"WH004", "WH006", "WH007"}  # WH007: across modules
    client = _serve(tmp_path)
    try:
        first = _open_at_start_up(client, tmp_path, sim)
        # the hover waits for the server's own analysis of the text
        assert "local" in _hover_kernel(client, sim.as_uri())["contents"]["value"]
        info = client.request("warp-harness/serverInfo", None)
        again = _publications(client, sim.as_uri())
    finally:
        client.close()
    assert first == expected
    assert info["start_up"]["published"] == 1 and info["analyses"] == 1
    assert info["published"] == 1 and again == []  # its own diagnostics were the same: not sent again


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_the_start_up_process_is_gone_once_start_up_is_over(tmp_path: Path, sim: Path) -> None:
    client = _serve(tmp_path)
    try:
        _open_at_start_up(client, tmp_path, sim)
        _hover_kernel(client, sim.as_uri())
        info = client.request("warp-harness/serverInfo", None)["start_up"]
        assert info["pid"] is not None and not info["running"]
        deadline = time.monotonic() + 10
        while info["pid"] in _children(client.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert info["pid"] not in _children(client.proc.pid)  # exited, and reaped (no zombie)
    finally:
        client.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_the_start_up_process_leaves_the_stdio_and_ends_with_the_server(tmp_path: Path) -> None:
    server = subprocess.Popen(
        module_command("warp_harness", "serve"), cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert server.stdout is not None
    child = _start_up_pid(server.pid)
    deadline = time.monotonic() + 10
    while os.readlink(f"/proc/{child}/fd/1") != os.devnull and time.monotonic() < deadline:
        time.sleep(0.001)  # it leaves the stdio first thing
    os.kill(child, signal.SIGSTOP)  # it cannot exit on its own meanwhile
    try:
        assert [os.readlink(f"/proc/{child}/fd/{fd}") for fd in (0, 1, 2)] == [os.devnull] * 3
        server.kill()
        server.wait(10)
        # the client sees the end of the server's stdout at once: the fork holds none of it
        assert select.select([server.stdout], [], [], 10)[0] and server.stdout.read() == b""
    finally:
        os.kill(child, signal.SIGCONT)
        server.stdout.close()
        if server.stdin is not None:
            server.stdin.close()
    assert _ended(child)  # the end of its pipe


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
@pytest.mark.parametrize("when", ["before the document opens", "after the document opened"])
def test_a_killed_start_up_process_leaves_the_server_its_own_diagnostics(
    tmp_path: Path, sim: Path, when: str
) -> None:
    expected = _in_process_diagnostics(tmp_path, sim)
    client = _serve(tmp_path)
    try:
        child = _start_up_pid(client.proc.pid)
        if when == "before the document opens":
            os.kill(child, signal.SIGKILL)
            first = _open_at_start_up(client, tmp_path, sim)
        else:  # while it reads the request, or analyses, or answers
            first = _open_at_start_up(client, tmp_path, sim, then=lambda: os.kill(child, signal.SIGKILL))
        assert _ended(child)
        info = client.request("warp-harness/serverInfo", None)
        assert not info["start_up"]["running"]
    finally:
        client.close()
    assert first == expected


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_an_edit_right_after_the_first_diagnostics_then_hover_and_code_actions(
    tmp_path: Path, sim: Path
) -> None:
    client = _serve(tmp_path)
    try:
        first = _open_at_start_up(client, tmp_path, sim)
        line = SIM.splitlines().index("        wp.launch(local, dim=n, inputs=[a, 1.0])")
        start = {"line": line, "character": SIM.splitlines()[line].index("[a, 1.0]")}
        end = {"line": line, "character": start["character"] + len("[a, 1.0]")}
        client.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": sim.as_uri(), "version": 2},
                "contentChanges": [{"range": {"start": start, "end": end}, "text": "[a]"}],
            },
        )
        second = client.wait_diagnostics(sim.as_uri(), 2, timeout=60)[1]
        hover = _hover_kernel(client, sim.as_uri())
        sqrt = next(d for d in second if d["code"] == "WH004")
        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": sim.as_uri()},
                "range": sqrt["range"],
                "context": {"diagnostics": [sqrt]},
            },
        )
        info = client.request("warp-harness/serverInfo", None)
    finally:
        client.close()
    assert {d["code"] for d in first} == {"WH004", "WH006", "WH007"}
    assert {d["code"] for d in second} == {"WH004", "WH007"}
    assert second == [d for d in first if d["code"] != "WH006"]  # the other records did not move
    assert "def local(a: array(dtype=float32, ndim=1))" in hover["contents"]["value"]
    assert any("WH004" in action["title"] for action in actions), actions
    assert info["start_up"]["published"] >= 1  # the edit too, when it came before this process was warm


# --- the parent's end alone, over pipes the test writes to ---------------------------------------------


def _answer_frame(message: Any) -> bytes:
    body = message if isinstance(message, bytes) else pickle.dumps(message)
    return len(body).to_bytes(8, "little") + body


@pytest.mark.parametrize("answer", [b"not a pickle", ("one", "two", "three"), (1, "not records")])
def test_a_malformed_answer_ends_the_start_up_process_and_settles_its_requests(answer: Any) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])  # stands for the fork: killed, as it was still busy
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    process = StartUpProcess(sleeper.pid, requests_w, answers_r)
    handed: list[Any] = []

    async def main() -> bool:
        loop = asyncio.get_running_loop()
        settled = process.ask(loop, "file:///k.py", "x = 1\n", "/k.py", {}, [], handed.append)
        assert settled is not None and not settled.is_set()
        os.write(answers_w, _answer_frame(answer))
        for _ in range(100):
            if process.closed:
                break
            await asyncio.sleep(0.01)
        return settled.is_set()

    try:
        assert asyncio.run(main())
        assert process.closed and handed == []
        assert sleeper.wait(10) is not None  # killed (within 10 s of a 60 s sleep): it was still busy
    finally:
        for fd in (requests_r, answers_w):
            os.close(fd)
        if sleeper.poll() is None:
            sleeper.kill()


def test_an_answer_is_handed_on_and_a_dropped_request_is_settled() -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    process = StartUpProcess(sleeper.pid, requests_w, answers_r)
    handed: list[Any] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        first = process.ask(
            loop, "file:///a.py", "a = 1\n", "/a.py", {"debounce_ms": 5}, [Path("/w")], handed.append
        )
        second = process.ask(loop, "file:///b.py", "b = 1\n", "/b.py", {}, [], handed.append)
        assert first is not None and second is not None
        process.drop("file:///b.py")
        assert second.is_set() and not first.is_set()
        os.write(answers_w, _answer_frame((1, ["a record"])) + _answer_frame((2, ["dropped"])))
        for _ in range(100):
            if first.is_set():
                break
            await asyncio.sleep(0.01)
        assert first.is_set() and process.idle()

    try:
        asyncio.run(main())
        assert handed == [["a record"]] and not process.closed
        header = os.read(requests_r, 8)
        request = pickle.loads(os.read(requests_r, int.from_bytes(header, "little")))
        assert request == (1, "a = 1\n", "/a.py", {"debounce_ms": 5}, ["/w"])
    finally:
        process.close()
        for fd in (requests_r, answers_w):
            os.close(fd)
        sleeper.kill()
        sleeper.wait(10)
