"""The ``mcp`` subcommand (registered lazily by warp_harness.cli; the MCP SDK is imported only here)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_subcommands(subparsers: Any) -> None:
    m = subparsers.add_parser(
        "mcp",
        help="serve the harness's tools to agents over the Model Context Protocol (stdio)",
        description="An MCP server over stdio: check, fix, explain_rule, validate, bench, replay, tune, "
        "results. Needs the mcp extra: pip install '.[mcp]' in a clone of warp-harness (README: Install).",
    )
    m.add_argument(
        "root", nargs="?", default=".", metavar="WORKSPACE", help="the workspace served (default: .)"
    )
    m.add_argument(
        "--trust",
        action="store_true",
        help="let validate, bench, replay and tune run this workspace's code (in the sandboxed worker); "
        "only this flag grants it, never the workspace's own files",
    )
    m.add_argument("--target", metavar="PROFILE", help="hardware profile the static rules check against")
    m.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    root = Path(args.root)
    if not root.is_dir():
        print(f"warp-harness mcp: {root} is not a folder", file=sys.stderr)
        return 2
    try:
        from warp_harness.agents import mcp_server
    except ImportError as exc:
        print(
            f"warp-harness mcp: the MCP SDK is not installed ({exc}); "
            "pip install '.[mcp]' in a clone of warp-harness (README: Install)",
            file=sys.stderr,
        )
        return 2
    mcp_server.run(root, trusted=bool(args.trust), target=args.target)
    return 0
