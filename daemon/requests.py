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
    client = msg.get("client")
    conn.client = str(client) if client is not None else None
    if "subscribe" in msg:
        conn.subscribed = bool(msg["subscribe"])
    return protocol.message(
        "welcome",
        server=SERVER_NAME,
        version=harness_version(),
        protocol=protocol.PROTOCOL_VERSION,
        supported=list(protocol.SUPPORTED_VERSIONS),
        workspace=str(daemon.workspace),
        trusted=daemon.trusted,
        max_frame=daemon.max_frame,
        capabilities=list(CAPABILITIES),
    )


async def cmd_ping(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    return protocol.message("pong")


async def cmd_subscribe(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    enabled = msg.get("enabled", True)
    if not isinstance(enabled, bool):
        raise protocol.ProtocolError(protocol.E_BAD_REQUEST, "`enabled` must be true or false")
    conn.subscribed = enabled
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
    path = daemon.path_field(msg)
    force = bool(msg.get("force", False))
    fut = daemon.enqueue(path, force=force)
    if msg.get("wait", True) is False:
        return protocol.message("queued", path=daemon.engine.display(path))
    report = await asyncio.shield(fut)
    return protocol.message("result", **report.to_dict())


async def cmd_results(daemon: Daemon, conn: Connection, msg: dict[str, Any]) -> Reply | None:
    if msg.get("path") is None:
        return protocol.message("results", results=[r.to_dict() for r in daemon.results.values()])
    display = daemon.engine.display(daemon.path_field(msg))
    found = daemon.results.get(display)
    return protocol.message("results", results=[found.to_dict()] if found else [])


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
