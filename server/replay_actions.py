"""Editor actions on a replayed launch's record (docs/capture.md): "Accept the new behaviour of KERNEL"
and "Open the stored case".

Accepting makes a kernel's replayed outputs its baseline. It replays the workspace's kernels, so the
server never does it itself: the ``warp-harness.accept`` command asks the workspace's daemon (which
runs code only when trusted, in its sandboxed worker) with ``{"type": "accept", "path": FILE,
"kernel": NAME}`` and tells the outcome with ``window/showMessage``; with no daemon connected it says
so. A stored case is a file of the failure library (``.warp-harness/repros/``) that the daemon's
result listed; its record is the one whose rule, kernel and message the case holds. Opening it shows
the file and how to replay it; reading it is reading data (size-capped msgpack, never executed).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from warp_harness.record import Record

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer
    from warp_harness.server.documents import DynamicState

log = logging.getLogger("warp_harness.server")

ACCEPT = "warp-harness.accept"
OPEN_CASE = "warp-harness.openCase"
# the replay records judged against the accepted baseline (a behaviour diff; NaN or Inf where the
# baseline had none): accepting the new outputs is the answer when the change was meant
ACCEPTABLE = frozenset({"WHD082", "WHD083"})
# accepting replays every captured launch of the kernel in the daemon's worker
ACCEPT_TIMEOUT_S = 600.0
MAX_CASE_BYTES = 16 * 1024 * 1024
MAX_CASE_VALUES = 1_000_000


def actions(
    ls: WarpHarnessServer, uri: str, record: Record, diagnostic: types.Diagnostic
) -> list[types.CodeAction]:
    """The actions a dynamic record of ``uri`` gets: accept (a baseline-judged replay record naming its
    kernel), and one "open" per stored case of the record."""
    path = to_fs_path(uri)
    kernel = record.location.kernel
    if path is None or not kernel:
        return []
    found: list[types.CodeAction] = []
    if record.rule in ACCEPTABLE:
        title = f"Accept the new behaviour of {kernel}"
        found.append(
            types.CodeAction(
                title=title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=types.Command(
                    title=title, command=ACCEPT, arguments=[str(Path(path).resolve()), kernel]
                ),
            )
        )
    dynamic = ls.documents.daemon_state(uri)
    cases = stored_cases(dynamic, record) if dynamic is not None else []
    for case in cases:
        title = "Open the stored case" if len(cases) == 1 else f"Open the stored case {Path(case).name}"
        found.append(
            types.CodeAction(
                title=title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=types.Command(title=title, command=OPEN_CASE, arguments=[case]),
            )
        )
    return found


# ---------------------------------------------------------------------------------------- stored cases


def case_files(root: Path, listed: Any) -> list[str]:
    """The failure-library files a daemon result lists (relative to the workspace ``root``), absolute,
    those inside the workspace's library folder only (the list comes over a socket; a case file can be
    a link out of the workspace)."""
    if not isinstance(listed, list):
        return []
    library = (root / ".warp-harness" / "repros").resolve()
    if not library.is_relative_to(root.resolve()):
        return []  # a `.warp-harness` leading out of the workspace
    found = []
    for entry in listed:
        if not isinstance(entry, str) or not entry or "\x00" in entry:
            continue
        try:
            file = (root / entry).resolve()
        except (OSError, RuntimeError):
            continue
        if file.parent == library and file.suffix == ".msgpack":
            found.append(str(file))
    return found


def read_case(file: str) -> dict[str, Any] | None:
    """A stored case as data (None: unreadable, too large, not a map). Never deleted, never run."""
    from warp_harness.safe_read import read_regular
    from warp_harness.wire.framing import ProtocolError, unpackb

    try:
        case = unpackb(
            read_regular(file, MAX_CASE_BYTES), max_size=MAX_CASE_BYTES, max_values=MAX_CASE_VALUES
        )
    except (OSError, ProtocolError, ValueError):
        return None
    except Exception:  # msgpack raises several unrelated classes on a corrupt file
        return None
    return case if isinstance(case, dict) else None


def stored_cases(dynamic: DynamicState, record: Record) -> list[str]:
    """The stored cases of a record: the listed case files holding its rule, kernel and message."""
    found = []
    for file in dynamic.cases:
        case = read_case(file)
        if (
            case is not None
            and case.get("rule") == record.rule
            and case.get("kernel") == record.location.kernel
            and case.get("message") == record.message
        ):
            found.append(file)
    return found


def open_case(ls: WarpHarnessServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """``warp-harness.openCase FILE``: show a case the daemon listed (only those: a command's arguments
    come from the client), and say how to replay it."""
    file = next((a for a in _flat(args) if isinstance(a, str)), None)
    known = {case for document in ls.documents if document.daemon for case in document.daemon.cases}
    if file is None or file not in known:
        message = f"warp-harness: {file or 'no case named'} is not a stored case of the daemon's results"
        ls.show_warning(message)
        return {"opened": False, "message": message}
    uri = from_fs_path(file) or file
    ls.window_show_document(types.ShowDocumentParams(uri=uri, take_focus=True))
    case = read_case(file) or {}
    root = next((r for r in ls.roots if Path(file).is_relative_to(r)), None)
    where = f" {root}" if root is not None else ""
    message = (
        f"warp-harness: stored case {Path(file).name}: {case.get('path')}::{case.get('kernel')} on "
        f"{case.get('device')} ({case.get('rule')}); "
        f"replay the library with `warp-harness replay{where} --trust`"
    )
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))
    return {"opened": True, "message": message}


# ---------------------------------------------------------------------------------------- accept


async def accept(ls: WarpHarnessServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """``warp-harness.accept FILE KERNEL``: the workspace's daemon accepts the kernel's replayed outputs
    as its baseline; the outcome is shown to the user and returned."""
    values = [a for a in _flat(args) if isinstance(a, str) and a]
    if len(values) != 2:
        return _tell(ls, types.MessageType.Error, "warp-harness: accept needs a file and a kernel name")
    file, kernel = values
    path = Path((to_fs_path(file) or file) if file.startswith("file:") else file).resolve()
    root = next((r for r in ls.roots if path.is_relative_to(r)), None)
    if root is None:
        return _tell(ls, types.MessageType.Error, f"warp-harness: {path} is not in a workspace folder")
    link = ls.links.get(root)
    if link is None or not link.connected:
        return _tell(
            ls,
            types.MessageType.Warning,
            f"warp-harness: no daemon is connected for {root}: "
            f"start it to accept the new behaviour of {kernel}",
        )
    try:
        reply = await asyncio.to_thread(_ask_daemon, root, str(path), kernel)
    except Exception as exc:  # the daemon went away meanwhile, or answered nonsense
        log.warning("accept of %s::%s failed", path, kernel, exc_info=True)
        return _tell(ls, types.MessageType.Error, f"warp-harness: accepting {kernel} failed: {exc}")
    if reply.get("type") == "error":
        return _tell(
            ls,
            types.MessageType.Error,
            f"warp-harness: the daemon did not accept {kernel}: {reply.get('message')}",
        )
    count = _count(reply)
    if not count:
        kept = [
            r.get("message") for r in reply.get("records") or [] if isinstance(r, dict) and r.get("message")
        ]
        why = f": {kept[0]}" if kept else ""
        return _tell(
            ls, types.MessageType.Warning, f"warp-harness: no captured launch of {kernel} was accepted{why}"
        )
    return _tell(
        ls,
        types.MessageType.Info,
        f"warp-harness: accepted the new behaviour of {kernel} ({count} launch{'es' if count != 1 else ''})",
        accepted=count,
    )


def _ask_daemon(root: Path, path: str, kernel: str) -> dict[str, Any]:
    """One request on a connection of its own (the link's carries pushes): hello, then accept."""
    from warp_harness.server.daemon_link import CLIENT_NAME, daemon_socket
    from warp_harness.wire.framing import Client

    with Client(daemon_socket(root), timeout=ACCEPT_TIMEOUT_S) as client:
        welcome = client.request("hello", client=CLIENT_NAME, subscribe=False)
        if welcome.get("workspace") != str(root):
            raise ConnectionError(f"the daemon on the socket is not {root}'s")
        return client.request("accept", path=path, kernel=kernel)


def _count(reply: dict[str, Any]) -> int:
    """How many launches an ``accepted`` reply says were accepted (docs/protocol.md: ``accepted``, a
    count; ``launches``, the list of them)."""
    for key in ("accepted", "launches"):
        value = reply.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, list):
            return len(value)
    return 0


def _tell(ls: WarpHarnessServer, kind: types.MessageType, message: str, **extra: Any) -> dict[str, Any]:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))
    return {"accepted": extra.get("accepted", 0), "message": message}


def _flat(args: tuple[Any, ...]) -> list[Any]:
    """A command's arguments, a client's single list argument unpacked."""
    return [item for arg in args for item in (arg if isinstance(arg, list) else [arg])]


__all__ = [
    "ACCEPT",
    "ACCEPTABLE",
    "OPEN_CASE",
    "accept",
    "actions",
    "case_files",
    "open_case",
    "stored_cases",
]
