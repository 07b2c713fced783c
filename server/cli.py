"""`warp-harness serve`: the language server over stdio (or TCP on 127.0.0.1)."""

from __future__ import annotations

import argparse
import gc
import logging
from typing import Any

LOCALHOST = "127.0.0.1"


def add_subcommands(subparsers: Any) -> None:
    serve = subparsers.add_parser("serve", help="run the language server (LSP over stdio)")
    serve.add_argument("--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)")
    serve.add_argument("--tcp", action="store_true", help=f"listen on TCP, bound to {LOCALHOST} only")
    serve.add_argument("--port", type=int, default=2087, help="TCP port (with --tcp; default 2087)")
    serve.add_argument("--log-file", metavar="FILE", help="write the server's log here")
    serve.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="warning")
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    # Start-up builds a few hundred thousand long-lived objects (lsprotocol's classes, the builtin
    # table, the rules); collecting while they are made only re-traverses them (~30 ms measured).
    # Frozen afterwards, later collections skip them: they live as long as the server.
    gc.disable()
    if args.log_file:
        logging.basicConfig(
            filename=args.log_file,
            level=getattr(logging, args.log_level.upper()),
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
    from warp_harness.server.app import build_server

    server = build_server()
    server.tier.warm_up()
    gc.freeze()
    gc.enable()
    if args.tcp:
        server.start_tcp(LOCALHOST, args.port)
    else:
        server.start_io()
    return 0
