"""`warp-harness mcp` against the CLI on the generated 2,000-line module, side by side in one run.

Rows (medians of ``--repeat`` rounds, interleaved):
- MCP start-up: spawn the server and complete the MCP handshake (SDK stdio client)
- MCP check: one ``check`` tool call on the file, on a server already running
- MCP start-up + check: what an agent pays for a one-off check
- CLI check: ``warp-harness check FILE --no-cache`` as a fresh process (its start-up included)

    pip install ".[mcp]"; python benchmarks/bench_mcp.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))
from corpus import generated_module


async def mcp_round(root: Path) -> tuple[float, float, int]:
    params = StdioServerParameters(
        command=sys.executable, args=["-I", "-m", "warp_harness", "mcp", str(root)]
    )
    t0 = time.perf_counter()
    async with Client(params) as client:
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        result = await client.call_tool("check", {"path": "module.py"})
        checked = time.perf_counter() - t1
        records = sum(len(f["records"]) for f in (result.structured_content or {})["files"])
    return started, checked, records


def cli_round(root: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", "check", "module.py", "--no-cache", "--exit-zero"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "module.py").write_text(generated_module(), encoding="utf-8")
        rows: dict[str, list[float]] = {
            "MCP start-up": [],
            "MCP check": [],
            "MCP start-up + check": [],
            "CLI check": [],
        }
        records = 0
        for _ in range(args.repeat):
            started, checked, records = asyncio.run(mcp_round(root))
            rows["MCP start-up"].append(started)
            rows["MCP check"].append(checked)
            rows["MCP start-up + check"].append(started + checked)
            rows["CLI check"].append(cli_round(root))
    lines = generated_module()
    cli = statistics.median(rows["CLI check"])
    print(f"generated module: {len(lines.splitlines())} lines, {records} records; {args.repeat} rounds")
    print(f"{'row':<24} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'x CLI':>6}")
    for name, values in rows.items():
        median = statistics.median(values)
        low, high = min(values) * 1e3, max(values) * 1e3
        print(f"{name:<24} {median * 1e3:>10.1f} {low:>8.1f} {high:>8.1f} {median / cli:>6.2f}")


if __name__ == "__main__":
    main()
