"""The daemon's requests, one function per request type (docs/protocol.md), as mypy's
``dmypy_server.py`` has one ``cmd_<name>`` method per command.

A handler takes the daemon, the connection the request came on and the request, and returns
the reply (``dispatch`` adds the request's id) or raises ``protocol.ProtocolError``. To add a
request: write ``cmd_<type>``, add it to ``HANDLERS``, document it in docs/protocol.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warp_harness.daemon import protocol
from warp_harness.daemon.connection import Connection
from warp_harness.wire.messages import Check, Hello, Queued, ResultsRequest, Subscribe, Welcome

if TYPE_CHECKING:
    from warp_harness.daemon.server import Daemon

SERVER_NAME = "warp-harness-daemon"
# what ``welcome`` announces
CAPABILITIES = (
    "check",
    "results",
    "accept",
    "status",
    "subscribe",
    "push:result",
    "push:progress",
    "push:state",
    "push:removed",
    "records:dynamic",  # `hello.records`: "dynamic" leaves the static tier's records out of results
)

Reply = dict[str, Any]
Handler = Callable[["Daemon", Connection, dict[str, Any]], Awaitable[Reply | None]]


def harness_version() -> str:
    try:
        from importlib.metadata import version

        return version("warp-harness")
    except Exception:
        return "0.0.0"


def path_field(workspace: Path, msg: dict[str, Any]) -> Path:
    """The request's ``path``: an existing file inside ``workspace`` (else a bad request)."""
    raw = msg.get("path")
    if not isinstance(raw, str) or not raw:
        raise protocol.ProtocolError(protocol.E_BAD_REQUEST, "`path` must be a non-empty string")
    path = Path(raw)
    path = (path if path.is_absolute() else workspace / path).resolve()
    if not path.is_relative_to(workspace):
        raise protocol.ProtocolError(protocol.E_BAD_REQUEST, f"{raw} is outside the workspace {workspace}")
    if not path.is_file():
        raise protocol.ProtocolError(protocol.E_BAD_REQUEST, f"{raw}: no such file")
    return path


async def cmd_hello(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    # `subscribe` has always been read as any truthy value; absent, the connection's stays
    hello = Hello.from_wire({**msg, "subscribe": bool(msg.get("subscribe", conn.subscribed))})
    conn.client = hello.client
    conn.subscribed = hello.subscribe
    conn.records = hello.records
    return Welcome(
        server=SERVER_NAME,
        version=harness_version(),
        protocol=protocol.PROTOCOL_VERSION,
        supported=list(protocol.SUPPORTED_VERSIONS),
        workspace=str(daemon.workspace),
        trusted=daemon.trusted,
        max_frame=daemon.max_frame,
        capabilities=list(CAPABILITIES),
    ).to_wire()


async def cmd_ping(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    return protocol.message("pong")


async def cmd_subscribe(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    conn.subscribed = Subscribe.from_wire(msg).enabled
    return protocol.message("ok")


async def cmd_status(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    engine = daemon.engine
    sup = engine.supervisor
    stats = engine.cache.stats
    return protocol.message(
        "status",
        workspace=str(daemon.workspace),
        trusted=daemon.trusted,
        clients=len(daemon.clients),
        clients_dropped=daemon.clients_dropped,
        queued=daemon.queued(),
        jobs_done=daemon.jobs_done,
        errors_replied=daemon.errors_replied,
        worker=sup.status() if sup else None,
        cache={"hits": stats.hits, "misses": stats.misses, "discarded": stats.discarded},
        kernel_cache=engine.prune_report.to_dict() if engine.prune_report else None,
        options=daemon.options.to_dict(),
    )


async def cmd_check(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    check = Check.from_wire(msg)
    path = daemon.path_field(msg)
    fut = daemon.enqueue(path, force=check.force)
    if not check.wait:
        return Queued(daemon.engine.display(path)).to_wire()
    report = await asyncio.shield(fut)
    return protocol.message("result", **daemon.result_fields(report, conn.records))


async def cmd_results(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    if ResultsRequest.from_wire(msg).path is None:
        reports = list(daemon.results.values())
    else:
        found = daemon.results.get(daemon.engine.display(daemon.path_field(msg)))
        reports = [found] if found else []
    return protocol.message("results", results=[daemon.result_fields(r, conn.records) for r in reports])


async def cmd_accept(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    """`warp-harness accept FILE[::KERNEL]` from the editor (docs/capture.md): the replayed outputs of
    the file's captured launches (of ``kernel``; all of the file's when null) become their baseline.
    Trusted workspaces only: it runs the workspace's kernels. The file is checked again afterwards."""
    path = daemon.path_field(msg)
    kernel = msg.get("kernel")
    if kernel is not None and (not isinstance(kernel, str) or not kernel.isidentifier()):
        raise protocol.ProtocolError(protocol.E_BAD_REQUEST, "`kernel` must be a kernel's name or null")
    if not daemon.trusted:
        raise protocol.ProtocolError(
            protocol.E_BAD_REQUEST,
            "the workspace is not trusted: accept replays its kernels (start the daemon with --trust)",
        )
    from warp_harness.daemon.captured.accept_request import accept_in_daemon

    reply = await asyncio.to_thread(accept_in_daemon, daemon.engine, path, kernel)
    daemon.enqueue(path, force=True)  # the editor's diagnostics follow the new baseline
    return protocol.message("accepted", **reply)


async def cmd_shutdown(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    return protocol.message("ok")  # the daemon stops once this reply is sent


HANDLERS: dict[str, Handler] = {
    "hello": cmd_hello,
    "ping": cmd_ping,
    "subscribe": cmd_subscribe,
    "status": cmd_status,
    "check": cmd_check,
    "results": cmd_results,
    "accept": cmd_accept,
    "shutdown": cmd_shutdown,
}


async def dispatch(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    """The reply to one request: its protocol version checked, then its handler's."""
    version = msg.get("v", protocol.PROTOCOL_VERSION)
    if type(version) is not int or version not in protocol.SUPPORTED_VERSIONS:  # not True, not 1.0
        raise protocol.ProtocolError(
            protocol.E_VERSION,
            f"protocol version {version!r} is not supported; this daemon speaks "
            f"{list(protocol.SUPPORTED_VERSIONS)}",
        )
    kind = msg["type"]
    handler = HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        raise protocol.ProtocolError(protocol.E_UNKNOWN_TYPE, f"unknown message type {kind!r}")
    return await handler(daemon, conn, msg)
