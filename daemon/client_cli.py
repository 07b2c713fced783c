"""A command-line client for a running daemon: ``status``, ``results``, ``watch``, ``stop``.

Each command finds the workspace's daemon the way the language server does (the private
runtime folder, never the workspace's own ``.warp-harness/daemon.json``), talks to it over the
socket protocol (docs/protocol.md) and exits 1 with one line when no daemon serves the
workspace. Nothing here imports Warp or workspace code.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from warp_harness.daemon import protocol as P

NO_DAEMON = 1


class NoDaemon(RuntimeError):
    """No daemon accepts connections for the workspace."""


class _JsonFormat(argparse.Action):
    """``--output-format json`` is ``--json`` (the spelling the other commands use)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, *_: Any
    ) -> None:
        namespace.json = values == "json"


def _output_format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output-format",
        "--format",
        choices=("text", "json"),
        action=_JsonFormat,
        dest="json",
        help="json: the same as --json",
    )


def add_subcommands(subparsers: Any) -> None:
    s = subparsers.add_parser("status", help="show the workspace daemon's state (pid, worker, queue)")
    _workspace_arg(s)
    s.add_argument("--json", action="store_true", help="the daemon's status reply as JSON")
    _output_format(s)
    s.set_defaults(func=cmd_status)

    r = subparsers.add_parser("results", help="print the daemon's latest result of every file")
    _workspace_arg(r)
    r.add_argument("--file", metavar="FILE", help="only this file's result")
    r.add_argument("--json", action="store_true", help="the results as JSON (the protocol's payload)")
    _output_format(r)
    r.set_defaults(func=cmd_results)

    w = subparsers.add_parser("watch", help="stream the daemon's results as files are saved")
    _workspace_arg(w)
    w.add_argument("--json", action="store_true", help="one JSON object per pushed message (JSON lines)")
    _output_format(w)
    w.add_argument(
        "--timeout", type=float, metavar="S", help="stop after S seconds (default: until interrupted)"
    )
    w.set_defaults(func=cmd_watch)

    t = subparsers.add_parser("stop", help="stop the workspace's daemon")
    _workspace_arg(t)
    t.set_defaults(func=cmd_stop)


def _workspace_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("workspace", nargs="?", default=".", metavar="WORKSPACE", help="default: .")


def _connect(workspace: Path, timeout: float = 30.0) -> P.Client:
    sock = P.daemon_socket(workspace)
    try:
        return P.Client(sock, timeout=timeout)
    except OSError as exc:
        raise NoDaemon(
            f"no daemon serves {workspace} ({sock}: {exc.strerror or exc}); "
            f"start one with `warp-harness daemon {workspace} --trust`"
        ) from None


def _run(args: argparse.Namespace, body: Any) -> int:
    workspace = Path(args.workspace).resolve()
    try:
        code: int = body(workspace)
    except NoDaemon as exc:
        print(f"warp-harness: {exc}", file=sys.stderr)
        return NO_DAEMON
    except P.ConnectionClosed as exc:
        print(f"warp-harness: the daemon closed the connection ({exc})", file=sys.stderr)
        return NO_DAEMON
    return code


def _reply(conn: P.Client, type_: str, expected: str, **fields: Any) -> dict[str, Any]:
    reply = conn.request(type_, **fields)
    if reply.get("type") != expected:
        raise NoDaemon(f"the daemon answered {reply.get('code', reply.get('type'))}: {reply.get('message')}")
    return dict(reply)


# --------------------------------------------------------------------------- status


def cmd_status(args: argparse.Namespace) -> int:
    def body(workspace: Path) -> int:
        with _connect(workspace) as client:
            status = _reply(client, "status", "status")
        if args.json:
            print(json.dumps(_jsonable(status), indent=2, sort_keys=True, allow_nan=False))
        else:
            sys.stdout.write(format_status(status))
        return 0

    return _run(args, body)


def format_status(status: Mapping[str, Any]) -> str:
    worker = status.get("worker") or {}
    trusted = "trusted" if status.get("trusted") else "untrusted (static tier only)"
    lines = [
        f"daemon for {status.get('workspace')}: {trusted}",
        f"  jobs done {status.get('jobs_done', 0)}, queued {status.get('queued', 0)}, "
        f"clients {status.get('clients', 0)}",
    ]
    if worker.get("worker_pid"):
        lines.append(
            f"  worker pid {worker['worker_pid']}: {worker.get('worker_jobs', 0)} jobs, "
            f"{worker.get('restarts', 0)} restarts, {worker.get('crashes', 0)} crashes, "
            f"Warp {worker.get('warp_version') or '?'}"
        )
    elif status.get("trusted"):
        lines.append("  worker: not running")
    cache = status.get("cache") or {}
    if cache:
        lines.append(
            f"  result cache: {cache.get('hits', 0)} hits, {cache.get('misses', 0)} misses, "
            f"{cache.get('discarded', 0)} discarded"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- results


def cmd_results(args: argparse.Namespace) -> int:
    def body(workspace: Path) -> int:
        fields: dict[str, Any] = {}
        if args.file:
            fields["path"] = str(Path(args.file).resolve())
        with _connect(workspace) as client:
            reply = _reply(client, "results", "results", **fields)
        results = [r for r in reply.get("results") or [] if isinstance(r, dict)]
        if args.json:
            print(json.dumps(_jsonable(results), indent=2, sort_keys=True, allow_nan=False))
        else:
            for result in results:
                write_result(result, sys.stdout)
            if not results:
                print("no results yet (the daemon checks a file when it is saved)")
        return 1 if any(_has_errors(r) for r in results) else 0

    return _run(args, body)


def _has_errors(result: Mapping[str, Any]) -> bool:
    return any(isinstance(r, dict) and r.get("severity") == "error" for r in result.get("records") or [])


def summary_line(result: Mapping[str, Any]) -> str:
    """``kernels/saxpy.py: ok, 2 kernels (saxpy: cpu pass; scale: cpu fail), 312 ms``."""
    parts = [f"{result.get('path')}: {result.get('status', '?')}"]
    kernels = result.get("kernels") or {}
    verdicts = []
    for name, kernel in kernels.items():
        validate = kernel.get("validate") if isinstance(kernel, dict) else None
        if isinstance(validate, dict) and validate:
            verdicts.append(f"{name}: " + ", ".join(f"{d} {v}" for d, v in validate.items()))
        elif isinstance(kernel, dict) and kernel.get("codegen") not in (None, "ok"):
            verdicts.append(f"{name}: codegen {kernel.get('codegen')}")
    if kernels:
        detail = f" ({'; '.join(verdicts)})" if verdicts else ""
        parts.append(f"{len(kernels)} kernel{'s' if len(kernels) != 1 else ''}{detail}")
    if result.get("cached"):
        parts.append("cached")
    if isinstance(result.get("elapsed_ms"), (int, float)):
        parts.append(f"{result['elapsed_ms']:.0f} ms")
    return ", ".join(parts)


def write_result(result: Mapping[str, Any], out: TextIO) -> None:
    out.write(summary_line(result) + "\n")
    for record in result.get("records") or []:
        if isinstance(record, dict):
            out.write("  " + record_line(record) + "\n")


def record_line(record: Mapping[str, Any]) -> str:
    loc = record.get("location") or {}
    where = f"{loc.get('path')}:{loc.get('line')}:{int(loc.get('col') or 0) + 1}"
    line = f"{where}: {record.get('rule')} [{record.get('severity')}] {record.get('message')}"
    if record.get("hint"):
        line += f"\n    hint: {record['hint']}"
    return line


# --------------------------------------------------------------------------- watch


def cmd_watch(args: argparse.Namespace) -> int:
    def body(workspace: Path) -> int:
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        with _connect(workspace, timeout=5.0) as client:
            welcome = _reply(client, "hello", "welcome", client="warp-harness watch", subscribe=True)
            if not args.json:
                trusted = "trusted" if welcome.get("trusted") else "untrusted"
                print(f"watching {welcome.get('workspace')} ({trusted}); Ctrl-C to stop", flush=True)
            return _stream(client, deadline, args.json, sys.stdout)

    try:
        return _run(args, body)
    except KeyboardInterrupt:
        return 0


def _stream(client: P.Client, deadline: float | None, as_json: bool, out: TextIO) -> int:
    queued = list(client.pushes)
    client.pushes.clear()
    while True:
        if queued:
            message = queued.pop(0)
        else:
            wait = 1.0 if deadline is None else deadline - time.monotonic()
            if wait <= 0:
                return 0
            try:
                message = client.recv(timeout=min(wait, 1.0))
            except TimeoutError:
                continue
        if as_json:
            out.write(json.dumps(_jsonable(message), sort_keys=True, allow_nan=False) + "\n")
        elif message.get("type") == "result":
            write_result(message, out)
        elif message.get("type") == "removed":
            out.write(f"{message.get('path')}: removed\n")
        elif message.get("type") == "state" and message.get("state") == "running":
            out.write(f"{message.get('path')}: checking...\n")
        out.flush()


# --------------------------------------------------------------------------- stop


def cmd_stop(args: argparse.Namespace) -> int:
    def body(workspace: Path) -> int:
        sock = P.daemon_socket(workspace)
        with _connect(workspace) as client:
            _reply(client, "shutdown", "ok")
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and sock.exists():
            time.sleep(0.05)
        if sock.exists():
            print(f"warp-harness: the daemon of {workspace} did not stop within 30 s", file=sys.stderr)
            return 1
        print(f"stopped the daemon of {workspace}")
        return 0

    return _run(args, body)


def _jsonable(value: Any) -> Any:
    """Protocol values as strict JSON: bytes as text, file names that are not UTF-8 escaped, non-finite
    floats as the strings ``"nan"``/``"inf"``/``"-inf"`` (as `check --output-format json` writes them:
    ``NaN`` is not JSON, ``JSON.parse`` rejects it)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="warp-harness")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code
