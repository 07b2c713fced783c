"""The MCP tools `capture` and `accept` through the SDK's stdio client: a real server process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

SCRIPT = """\
import numpy as np
import warp as wp


@wp.kernel
def double(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * 2.0


if __name__ == "__main__":
    wp.launch(double, dim=4, inputs=[wp.array(np.ones(4, dtype=np.float32)), wp.zeros(4, dtype=float)])
"""


@asynccontextmanager
async def serving(root: Path, *flags: str) -> AsyncIterator[Client]:
    # the tests' environment (the SDK passes a server only HOME, PATH and a few more): the same user
    # cache, and so the same secret, as the `warp-harness` commands a test runs beside the server
    params = StdioServerParameters(
        command=sys.executable,
        args=["-I", "-m", "warp_harness", "mcp", str(root), *flags],
        cwd=str(root),
        env=dict(os.environ),
    )
    async with Client(params) as client:
        yield client


async def test_capture_and_accept_are_refused_without_trust(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(SCRIPT)
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = true\n")  # does not count
    async with serving(tmp_path) as client:
        for tool, args in (("capture", {"command": ["python", "k.py"]}), ("accept", {"path": "k.py"})):
            result = await client.call_tool(tool, args)
            content = result.structured_content or {}
            assert content["status"] == "untrusted", content
    assert not (tmp_path / ".warp-harness" / "captures").exists()


async def test_capture_runs_python_commands_only(tmp_path: Path) -> None:
    async with serving(tmp_path, "--trust") as client:
        result = await client.call_tool("capture", {"command": ["sh", "-c", "touch pwned"]})
        assert result.is_error and "Python commands only" in str(result.content)
    assert not (tmp_path / "pwned").exists()


@pytest.mark.slow
async def test_an_agent_captures_edits_and_accepts(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(SCRIPT)
    async with serving(tmp_path, "--trust") as client:
        result = await client.call_tool("capture", {"command": ["python", "k.py"]})
        content = result.structured_content or {}
        assert content["launches"] == 1 and content["captured"] == ["k.py::double"], content
        (tmp_path / "k.py").write_text(SCRIPT.replace("x[i] * 2.0", "x[i] * 3.0"))
        result = await client.call_tool("validate", {"path": "k.py"})
        rules = [r["rule"] for r in (result.structured_content or {}).get("records", [])]
        assert "WHD082" in rules, result.structured_content  # the agent sees its outputs moved
        result = await client.call_tool("accept", {"path": "k.py", "kernel": "double"})
        assert (result.structured_content or {})["accepted"] == 1, result.structured_content
        result = await client.call_tool("validate", {"path": "k.py"})
        rules = [r["rule"] for r in (result.structured_content or {}).get("records", [])]
        assert "WHD082" not in rules


@pytest.mark.slow
async def test_replay_reruns_a_stored_captured_failure_as_the_cli_does(tmp_path: Path) -> None:
    """warp#667's read past the end (https://github.com/NVIDIA/warp/issues/667), made by an edit of a
    captured kernel: `validate` stores the failing replay, and the MCP `replay` re-runs it from its
    capture, with the records of `warp-harness replay --trust`, until the read is fixed."""
    (tmp_path / "k.py").write_text(SCRIPT)
    async with serving(tmp_path, "--trust") as client:
        result = await client.call_tool("capture", {"command": ["python", "k.py"]})
        assert (result.structured_content or {})["launches"] == 1, result.structured_content
        (tmp_path / "k.py").write_text(SCRIPT.replace("x[i] * 2.0", "x[i + 2] * 2.0"))
        validated = (await client.call_tool("validate", {"path": "k.py"})).structured_content or {}
        assert validated["repros"], validated
        replay = (await client.call_tool("replay", {})).structured_content or {}
        (case,) = replay["cases"]
        assert replay["failing"] == 1 and case["status"] == "fail", replay
        assert "WHD080" in [r["rule"] for r in case["records"]], case  # the out-of-bounds read
        cli = subprocess.run(
            [sys.executable, "-m", "warp_harness", "replay", ".", "--trust", "--format", "json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert cli.returncode == 1, cli.stdout + cli.stderr
        (cli_case,) = json.loads(cli.stdout)["cases"]
        assert (cli_case["case"], cli_case["status"]) == (case["case"], case["status"]), cli.stdout
        fields = ("rule", "severity", "location", "message")
        assert [[r[f] for f in fields] for r in case["records"]] == [
            [r[f] for f in fields] for r in cli_case["records"]
        ]
        (tmp_path / "k.py").write_text(SCRIPT)  # fixed: the stored case passes
        replay = (await client.call_tool("replay", {})).structured_content or {}
        assert replay["failing"] == 0 and [c["status"] for c in replay["cases"]] == ["pass"], replay
    async with serving(tmp_path) as client:  # not trusted: the case is not run
        replay = (await client.call_tool("replay", {})).structured_content or {}
        assert replay["status"] == "untrusted" and replay["cases"] == [], replay
