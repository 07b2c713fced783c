"""An agent loop that repairs kernels using only the warp-harness MCP tools.

It knows nothing about the bugs in ``examples/buggy/``: it copies each file into a scratch workspace,
asks the server to `check` it, applies the fixes the records carry (`fix`, unsafe ones too: an agent
reviews the diff, as this loop's output shows), checks again, and stops when a round changes
nothing. What is left is printed with its hint: the part a model (or a person) has to reason about.

    pip install "warp-harness[mcp]"
    python examples/agent_loop.py [FOLDER]      # default: examples/buggy

It prints one line per file and a summary: findings before, repaired, left.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

MAX_ROUNDS = 5


def _findings(result: Any) -> list[dict[str, Any]]:
    content = result.structured_content or {}
    records = [r for f in content.get("files", []) for r in f["records"]]
    return [r for r in records if r["severity"] in ("error", "warning")]


async def repair(client: Client, name: str) -> tuple[int, int, list[dict[str, Any]]]:
    """(findings before, findings after, what is left) for one file of the workspace."""
    before = _findings(await client.call_tool("check", {"path": name}))
    left = before
    for _ in range(MAX_ROUNDS):
        if not any(r.get("fix") for r in left):
            break
        fixed = await client.call_tool("fix", {"path": name, "unsafe": True, "write": True})
        if fixed.is_error or not (fixed.structured_content or {}).get("applied"):
            break
        left = _findings(await client.call_tool("check", {"path": name}))
    return len(before), len(left), left


async def main(folder: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="wh_agent_") as tmp:
        workspace = Path(tmp)
        files = sorted(p.name for p in folder.glob("*.py"))
        for name in files:
            shutil.copy(folder / name, workspace / name)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-I", "-m", "warp_harness", "mcp", str(workspace)],
            cwd=str(workspace),
        )
        total_before = total_after = 0
        async with Client(params) as client:
            for name in files:
                before, after, left = await repair(client, name)
                total_before += before
                total_after += after
                print(
                    f"{name}: {before} findings, {before - after} repaired by the tools' fixes, {after} left"
                )
                for r in left:
                    doc = await client.call_tool("explain_rule", {"rule": r["rule"]})
                    summary = (doc.structured_content or {}).get("summary", "")
                    print(f"    {r['rule']} line {r['location']['line']}: {r['message']}")
                    print(f"        hint: {(r.get('hint') or summary).splitlines()[0]}")
        repaired = total_before - total_after
        summary = f"{total_before} findings: {repaired} repaired, {total_after} left for a model"
        print(f"\n{len(files)} files, {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "buggy")))
