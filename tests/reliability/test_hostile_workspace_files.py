"""Hostile workspace files must not disable the tools (issue 12, item 11).

A ``pyproject.toml`` nested 5,000 arrays deep, holding a 5,001-digit integer, a 100 MB one,
``exclude = [""]``, an unknown ``target`` or a 4,000-digit ``debounce_ms``; a tuning result
in ``.warp-harness/tune/`` nested 100,000 deep; a 4,000-digit ``debounceMs`` in the editor's
settings. The real ``warp-harness check`` and ``ci`` end with one configuration-error line
and exit 2; a real ``warp-harness serve`` over stdio says it once (window/showMessage) and
keeps publishing the diagnostics of a buggy kernel, with the default settings.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import write

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))
from stdio_client import StdioClient

BUGGY = (Path(__file__).parents[2] / "examples" / "buggy" / "mixed_precision.py").read_text()
EXPECTED = ["WH003", "WH003", "WH004"]


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _big_pyproject(path: Path) -> None:
    with open(path, "wb") as fh:  # 100 MB, sparse: the reader must refuse it by its size
        fh.write(b"[tool.warp-harness]\n")
        fh.truncate(100 << 20)


PYPROJECTS: dict[str, tuple[str, str]] = {
    # name: (the [tool.warp-harness] body, what the one error line must say)
    "deep_arrays": (f"select = {_deep(5000)}", "nested too deeply to read"),
    "huge_integer": (f"debounce_ms = {'1' * 5001}", "Exceeds the limit (4300 digits)"),
    "empty_exclude": ('exclude = [""]', "`exclude` holds an empty pattern"),
    "unknown_target": ('target = "sm_nope"', "unknown target 'sm_nope'"),
    "long_debounce": (f"debounce_ms = {'1' * 4000}", "`debounce_ms` must be an integer from 0 to 60000"),
    "100_mb": ("", "file is 100.0 MB; larger than the 2.0 MB limit; not read"),
}


def _workspace(tmp_path: Path, case: str) -> Path:
    ws = tmp_path / "ws"
    write(ws, "k.py", BUGGY)
    body, _ = PYPROJECTS[case]
    if case == "100_mb":
        _big_pyproject(ws / "pyproject.toml")
    else:
        (ws / "pyproject.toml").write_text(f"[tool.warp-harness]\n{body}\n")
    return ws


@pytest.mark.parametrize("command", ["check", "ci"])
@pytest.mark.parametrize("case", sorted(PYPROJECTS))
def test_the_cli_reports_a_hostile_pyproject_in_one_line_and_exits_2(
    tmp_path: Path, case: str, command: str
) -> None:
    ws = _workspace(tmp_path, case)
    r = subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", command, "."],
        capture_output=True,
        text=True,
        cwd=str(ws),
        timeout=120,
    )
    assert r.returncode == 2, r.stderr[-3000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warp-harness: configuration error: "), lines[:5]
    assert PYPROJECTS[case][1] in lines[0] and str(ws / "pyproject.toml") in lines[0]
    assert len(lines[0]) < 400


# ---------------------------------------------------------------- the language server


def _codes(diagnostics: list[dict[str, Any]]) -> list[str]:
    return sorted(str(d.get("code")) for d in diagnostics)


class _Session:
    """A real ``python -I -m warp_harness serve`` over stdio; every notification is kept."""

    def __init__(self, ws: Path, options: Any = None) -> None:
        self.client = StdioClient([sys.executable, "-I", "-m", "warp_harness", "serve"], ws)
        self.messages: list[str] = []
        self.client.initialize(ws, options)

    def diagnostics(self, uri: str, version: int, timeout: float = 60.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                _, note = self.client.notifications.get(timeout=0.2)
            except queue.Empty:
                continue
            params = note.get("params") or {}
            if note.get("method") == "window/showMessage":
                self.messages.append(params.get("message", ""))
            elif note.get("method") == "textDocument/publishDiagnostics":
                if params.get("uri") == uri and params.get("version") == version:
                    return list(params.get("diagnostics") or [])
        raise AssertionError(f"no diagnostics for version {version} within {timeout} s: {self.messages}")

    def edit_twice(self, path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Open the file, then replace its text: the diagnostics of both versions."""
        uri, text = path.as_uri(), path.read_text()
        self.client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}},
        )
        first = self.diagnostics(uri, 1)
        self.client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text + "# edited\n"}]},
        )
        return first, self.diagnostics(uri, 2)

    def close(self) -> None:
        self.client.close()


SERVER_CASES = {
    # name: (what the single message must say; None: the file is only logged)
    "deep_arrays": "nested too deeply to read",
    "huge_integer": "Exceeds the limit (4300 digits)",
    "long_debounce": "`debounce_ms` must be an integer from 0 to 60000",
    "deep_tune_result": None,
    "client_debounce": "ignoring the editor's settings",
}


@pytest.mark.parametrize("case", sorted(SERVER_CASES))
def test_the_server_keeps_publishing_diagnostics_despite_a_hostile_file(tmp_path: Path, case: str) -> None:
    options: Any = None
    if case == "deep_tune_result":
        ws = tmp_path / "ws"
        write(ws, "k.py", BUGGY)
        write(ws, ".warp-harness/tune/k__scale.json", _deep(100_000))
    elif case == "client_debounce":
        ws = tmp_path / "ws"
        write(ws, "k.py", BUGGY)
        options = {"warpHarness": {"debounceMs": int("1" * 4000)}}
    else:
        ws = _workspace(tmp_path, case)
    session = _Session(ws, options)
    try:
        first, second = session.edit_twice(ws / "k.py")
        assert _codes(first) == EXPECTED and _codes(second) == EXPECTED
        assert session.client.alive()
    finally:
        session.close()
    assert not [m for m in session.messages if "Error in server" in m], session.messages
    expected = SERVER_CASES[case]
    if expected is None:
        assert session.messages == []
    else:
        said = [m for m in session.messages if expected in m]
        assert len(said) == 1 and len(said[0]) < 400, session.messages
