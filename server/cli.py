"""`warp-harness serve`: the language server over stdio (or TCP on 127.0.0.1)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

LOCALHOST = "127.0.0.1"
# `serve`'s options as an editor starts it (none, or --stdio): what `_add_options` defaults them to
DEFAULTS = {
    "stdio": False,
    "tcp": False,
    "port": 2087,
    "token_file": None,
    "log_file": None,
    "log_level": "warning",
    "start_up_process": True,
}


def add_subcommands(subparsers: Any) -> None:
    serve = subparsers.add_parser("serve", help="run the language server (LSP over stdio)")
    _add_options(serve)


def main(args: list[str]) -> int:
    """`warp-harness serve ARGS` (`warp_harness.cli.main` hands it here): the options an editor passes
    (none, or ``--stdio``) need no parser, whose import and build the reply to `initialize` would wait
    for; any other goes through argparse as ever."""
    if all(arg == "--stdio" for arg in args):
        return cmd_serve(SimpleNamespace(**DEFAULTS))
    import argparse

    parser = argparse.ArgumentParser(
        prog="warp-harness serve", description="run the language server (LSP over stdio)"
    )
    _add_options(parser)
    return cmd_serve(parser.parse_args(args))


def _add_options(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)")
    serve.add_argument("--tcp", action="store_true", help=f"listen on TCP, bound to {LOCALHOST} only")
    serve.add_argument("--port", type=int, help=f"TCP port (with --tcp; default {DEFAULTS['port']})")
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --tcp: write the token clients must present here (mode 0600; default "
        "<private runtime folder>/lsp-PORT.token)",
    )
    serve.add_argument("--log-file", metavar="FILE", help="write the server's log here")
    serve.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="how much the server logs on stderr (default warning)",
    )
    serve.add_argument(
        "--no-start-up-process",
        dest="start_up_process",
        action="store_false",
        help="analyse the documents opened at start-up in this process only (no forked start-up process)",
    )
    serve.set_defaults(func=cmd_serve, **{k: v for k, v in DEFAULTS.items() if k not in ("stdio", "tcp")})


def cmd_serve(args: argparse.Namespace | SimpleNamespace) -> int:
    # Start-up builds a few hundred thousand long-lived objects (lsprotocol's classes, the builtin
    # table, the rules); collecting while they are made only re-traverses them (~30 ms measured).
    # Frozen afterwards (server/collector.py), later collections skip them: they live as long as the server.
    gc.disable()
    start_up = None
    # first: the fork imports the analysis stack while this process imports pygls (over TCP a client comes
    # later, and start-up is not what it waits for)
    if args.start_up_process and not args.tcp:
        from warp_harness.server import start_up_process

        start_up = start_up_process.fork()
    if args.log_file or args.log_level != DEFAULTS["log_level"]:
        _log(args.log_file, args.log_level)
    from warp_harness.server.generated_code import kept

    with kept() as code:  # pygls and lsprotocol: attrs' methods from an earlier start's code objects
        from warp_harness.server.app import build_server

        server = build_server()
    server.attach_start_up(start_up)
    server.in_worker(server.warm_up)  # on the analysis thread, while the client's initialize handshake runs
    server.in_worker(code.save)  # after it: off the way to the first diagnostics
    if args.tcp:
        return _serve_tcp(server, args)
    server.start_io()
    return 0


def _log(file: str | None, level: str) -> None:
    """The server's log into ``file``, else on stderr (an editor shows it in its log: VS Code's output
    channel)."""
    import logging

    if file:
        logging.basicConfig(
            filename=file,
            level=getattr(logging, level.upper()),
            format="%(asctime)s %(name)s %(levelname)s %(message)s",
        )
    else:
        logging.basicConfig(
            stream=sys.stderr,
            level=getattr(logging, level.upper()),
            format="%(name)s %(levelname)s %(message)s",
        )


def _serve_tcp(server: Any, args: argparse.Namespace | SimpleNamespace) -> int:
    """TCP: only a client that presents the token written to a 0600 file may talk to the server
    (any local user can reach 127.0.0.1; the server acts as the user who started it)."""
    from warp_harness.server import transport

    try:
        token_file = Path(args.token_file) if args.token_file else transport.default_token_file(args.port)
        token = transport.create_token_file(token_file)
    except OSError as exc:
        print(f"warp-harness: cannot write the token file: {exc}", file=sys.stderr)
        return 2
    print(
        f"warp-harness: serving LSP on {LOCALHOST}:{args.port}; the client's `initialize` must carry "
        f"initializationOptions.authToken = the contents of {token_file}",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.start_tcp(LOCALHOST, args.port, token=token)
    except OSError as exc:
        print(f"warp-harness: cannot listen on {LOCALHOST}:{args.port}: {exc}", file=sys.stderr)
        return 2
    finally:
        transport.remove_token_file(token_file, token)
    return 0
