"""`warp-harness mcp`, driven through the MCP SDK's own stdio client: a real server process."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

MIXED = """\
import warp as wp


@wp.kernel
def scale(x: wp.array(dtype=float), s: float):
    i = wp.tid()
    x[i] = x[i] * 2
"""


@asynccontextmanager
async def serving(root: Path, *flags: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-I", "-m", "warp_harness", "mcp", str(root), *flags], cwd=str(root)
    )
    async with Client(params) as client:
        yield client


def _records(result: Any) -> list[dict[str, Any]]:
    content = result.structured_content or {}
    if "files" in content:
        return [r for f in content["files"] for r in f["records"]]
    return list(content.get("records") or [])


def _workers(root: Path) -> list[int]:
    """Worker processes (warp_harness.daemon.worker) whose folder is ``root``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            cwd = (proc / "cwd").resolve()
        except OSError:
            continue
        if b"warp_harness.daemon.worker" in cmdline and cwd == root.resolve():
            found.append(int(proc.name))
    return found


async def test_tools_declare_the_record_schema_and_check_returns_hints(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(MIXED, encoding="utf-8")
    async with serving(tmp_path) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) >= {
            "check",
            "fix",
            "explain_rule",
            "validate",
            "bench",
            "replay",
            "tune",
            "results",
        }
        schema = listed["check"].output_schema or {}
        record = schema["$defs"]["RecordModel"]["properties"]
        assert {
            "stage",
            "rule",
            "severity",
            "location",
            "message",
            "expected",
            "actual",
            "hint",
            "fix",
        } <= set(record)
        assert listed["validate"].output_schema is not None
        result = await client.call_tool("check", {"path": "kern.py"})
        assert not result.is_error
        (wh003,) = [r for r in _records(result) if r["rule"] == "WH003"]
        assert wh003["location"]["path"] == "kern.py" and wh003["location"]["line"] == 7
        assert wh003["hint"] and wh003["fix"]["edits"]
        # the documentation link `check --output-format json` gives (it was null here)
        from warp_harness.rules import rule_by_id

        wh003_rule = rule_by_id("WH003")
        assert wh003_rule is not None and wh003["url"].endswith("/docs/rules.md#wh003")
        # source text instead of a file
        text = await client.call_tool("check", {"source": MIXED, "name": "scratch.py"})
        assert [r["rule"] for r in _records(text)] == [r["rule"] for r in _records(result)]


async def test_check_reports_a_hostile_notebook_as_one_record_and_goes_on(tmp_path: Path) -> None:
    """Notebooks a repository can ship (issue #30, finding 6): cells that are not objects (79 bytes),
    and one nested past the JSON parser's depth (30 KB). Each aborted the whole tool call before."""
    (tmp_path / "kern.py").write_text(MIXED, encoding="utf-8")
    (tmp_path / "cells.ipynb").write_text(
        '{"cells": [1, 2], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
    )
    (tmp_path / "deep.ipynb").write_text('{"cells": [{"source": ' + "[" * 15_000 + "]" * 15_000 + "}]}")
    async with serving(tmp_path) as client:
        result = await client.call_tool("check", {"path": "."})
        assert not result.is_error, bad_text(result)
        files = {
            f["path"]: [r["rule"] for r in f["records"]] for f in (result.structured_content or {})["files"]
        }
        assert files["cells.ipynb"] == files["deep.ipynb"] == ["WH000"]
        assert "WH003" in files["kern.py"]
        (deep,) = [r for r in _records(result) if r["path"] == "deep.ipynb"]
        assert "nested too deeply" in deep["message"]
        one = await client.call_tool("check", {"path": "cells.ipynb"})
        assert not one.is_error and "cell 1 is not a JSON object" in _records(one)[0]["message"]


async def test_fix_makes_the_diagnostic_go_away(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(MIXED, encoding="utf-8")
    async with serving(tmp_path) as client:
        dry = await client.call_tool("fix", {"path": "kern.py"})
        content = dry.structured_content or {}
        assert content["applied"] >= 1 and "WH003" in content["fixed_rules"]
        assert "-    x[i] = x[i] * 2" in content["diff"] and not content["written"]
        assert (tmp_path / "kern.py").read_text() == MIXED  # a dry run writes nothing
        written = await client.call_tool("fix", {"path": "kern.py", "write": True})
        assert (written.structured_content or {})["written"] is True
        again = await client.call_tool("check", {"path": "kern.py"})
        assert "WH003" not in [r["rule"] for r in _records(again)]


async def test_malformed_arguments_get_an_error_and_the_server_keeps_serving(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(MIXED, encoding="utf-8")
    async with serving(tmp_path) as client:
        bad = await client.call_tool("check", {"path": 5})
        assert bad.is_error
        outside = await client.call_tool("check", {"path": "../../etc"})
        assert outside.is_error and "outside the workspace" in bad_text(outside)
        unknown = await client.call_tool("explain_rule", {"rule": "WH999"})
        assert unknown.is_error and "unknown rule" in bad_text(unknown)
        fine = await client.call_tool("explain_rule", {"rule": "WHD020"})
        assert not fine.is_error and (fine.structured_content or {})["tier"] == "dynamic"
        docs = await client.read_resource("warp-harness://rules")
        assert "WH003" in docs.contents[0].text  # type: ignore[union-attr]


def bad_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_execution_is_refused_without_trust(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "contracts" / "boundary_bug.py", tmp_path / "boundary_bug.py")
    # the workspace trusting itself does not count: only the server's --trust flag does
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\ntrust = true\n")
    async with serving(tmp_path) as client:
        for tool in ("validate", "bench"):
            result = await client.call_tool(tool, {"path": "boundary_bug.py"})
            content = result.structured_content or {}
            assert content["status"] == "untrusted", content
            assert "--trust" in content["records"][0]["message"]
            # the hint must not send the agent to pyproject's `trust = true`, which this test shows is ignored
            assert "mcp --trust" in content["records"][0]["hint"], content
            assert "trust = true" not in content["records"][0]["hint"], content
            assert content["records"][0]["url"], content
        assert not (tmp_path / ".warp-harness" / "repros").exists()
        assert _workers(tmp_path) == []


@pytest.mark.slow
async def test_validate_reports_the_boundary_bugs_first_bad_index(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "contracts" / "boundary_bug.py", tmp_path / "boundary_bug.py")
    steps: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        steps.append(message or "")

    async with serving(tmp_path, "--trust") as client:
        result = await client.call_tool("validate", {"path": "boundary_bug.py"}, progress_callback=progress)
        content = result.structured_content or {}
        assert content["kernels"]["shift_add"]["validate"] == {"cpu": "fail"}, content
        unwritten = [r for r in content["records"] if r["location"]["kernel"] == "shift_add" and r["hint"]]
        assert unwritten and unwritten[0]["severity"] == "error", content["records"]
        # size 16 fails at its last element: the guard's off-by-one
        assert "where the first bad index was 15" in unwritten[0]["message"], unwritten[0]
        assert "boundary" in unwritten[0]["hint"]
        assert content["repros"] and (tmp_path / content["repros"][0]).is_file()
        assert any("validate" in s for s in steps), steps


@pytest.mark.slow
async def test_cancelling_a_long_bench_kills_its_worker(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "contracts" / "hang.py", tmp_path / "hang.py")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness]\n[tool.warp-harness.runtime]\nlaunch_timeout_s = 600\ntimeout_s = 600\n"
    )
    started = anyio.Event()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        if message and "validate" in message:
            started.set()

    async with serving(tmp_path, "--trust") as client:
        with anyio.move_on_after(120) as scope:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool("bench", {"path": "hang.py"}, progress_callback=progress)

                group.start_soon(call)
                await started.wait()
                assert _workers(tmp_path), "the worker runs the spinning kernel"
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught, "no validate progress within 120 s"
        assert await _eventually(lambda: not _workers(tmp_path)), _workers(tmp_path)
        # the server keeps serving
        after = await client.call_tool("explain_rule", {"rule": "WH001"})
        assert not after.is_error


async def _eventually(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        await anyio.sleep(0.2)
    return condition()


@pytest.mark.slow
async def test_validate_and_results_go_through_a_running_daemon(tmp_path: Path) -> None:
    import os
    import signal

    sys.path.insert(0, str(REPO / "tests" / "daemon"))
    from daemon_helpers import spawn_daemon, wait_ready

    from warp_harness.daemon import protocol

    shutil.copy(EXAMPLES / "contracts" / "boundary_bug.py", tmp_path / "boundary_bug.py")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness]\n[tool.warp-harness.runtime]\nbench = false\n"
    )
    sock = protocol.daemon_socket(tmp_path)
    daemon = spawn_daemon(tmp_path, sock, "--no-watch")
    try:
        wait_ready(daemon, sock)
        async with serving(tmp_path, "--trust") as client:
            first = (await client.call_tool("validate", {"path": "boundary_bug.py"})).structured_content or {}
            assert first["via"] == "daemon" and first["kernels"]["shift_add"]["validate"] == {"cpu": "fail"}
            await client.call_tool("validate", {"path": "boundary_bug.py"})  # a second save's worth
            found = (await client.call_tool("results", {})).structured_content or {}
            (entry,) = found["files"]
            assert (
                entry["path"] == "boundary_bug.py"
                and entry["kernels"]["shift_add"]["validate"]["cpu"] == "fail"
            )
            assert any(r["kernel"] == "shift_add" and r["streak"] >= 2 for r in entry["repeated"]), entry
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.communicate(timeout=60)


@pytest.mark.slow
async def test_bench_replay_and_tune_answer_with_rows_cases_and_an_edit(tmp_path: Path) -> None:
    for name in ("saxpy.py", "boundary_bug.py"):
        shutil.copy(EXAMPLES / "contracts" / name, tmp_path / name)
    # the tune example with two candidates (the current ITEMS = 4 among them) at one size: the answer's
    # rows, front and edit are made the same way (four candidates at three sizes: four compiles)
    original = (EXAMPLES / "contracts" / "tune_chunks.py").read_text()
    small = original.replace("sizes=[64, 4096, 1 << 16]", "sizes=[64]").replace("[1, 2, 4, 8]", "[2, 4]")
    assert "sizes=[64]," in small and "[2, 4]" in small and "ITEMS = wp.constant(4)" in small
    (tmp_path / "tune_chunks.py").write_text(small)
    async with serving(tmp_path, "--trust") as client:
        bench = (await client.call_tool("bench", {"path": "saxpy.py", "repeats": 3})).structured_content or {}
        (row,) = bench["rows"]
        assert row["kernel"] == "saxpy" and row["status"] == "timed" and row["median_s"] > 0, row
        # a failing case is stored by validate, then replayed: it still fails
        await client.call_tool("validate", {"path": "boundary_bug.py"})
        replay = (await client.call_tool("replay", {})).structured_content or {}
        assert replay["failing"] == 1 and replay["cases"][0]["status"] == "fail", replay
        tuned = await client.call_tool("tune", {"path": "tune_chunks.py", "repeats": 3})
        tune = tuned.structured_content or {}
        assert tune["pareto"] and tune["best"] is not None and tune["edits"], tune
        # the winner as an edit of the module's constant; a diff only when it differs from the source
        assert tune["edits"][0]["new_text"] == f"wp.constant({tune['best']['config']['ITEMS']})"
        assert (tune["diff"] == "") == bool(tune["best"]["current"]), tune
        assert (tmp_path / "tune_chunks.py").read_text() == small  # nothing written
