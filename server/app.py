"""The language server: the state it keeps, its start-up, and the LSP methods, each handed to the module
that owns its feature.

| feature | module |
|---|---|
| per-document state (analysis, diagnostics, notebook cells, daemon result) | documents.py |
| analysis requests, debounce, open/close (text documents and notebooks) | analyses.py, notebooks.py |
| diagnostics out (push, or kept for pulls) | publishing.py, pull.py |
| code actions; accept / open a stored case | actions.py, replay_actions.py |
| hover | hover.py |
| the daemon: links, start/stop, its messages | daemon_control.py, daemon_results.py |
| initialize, settings, folders, watched files | session.py |

Nothing here executes workspace code or imports Warp.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from warp_harness.config import ConfigError
from warp_harness.record import Record
from warp_harness.server import (
    analyses,
    daemon_control,
    notebooks,
    publishing,
    pull,
    session,
    transport,
)
from warp_harness.server.analysis import Analyser, StaticTier
from warp_harness.server.collector import Collector
from warp_harness.server.documents import Documents, StaticState
from warp_harness.server.options import client_overrides
from warp_harness.server.tuning import TuneResults
from warp_harness.server.worker import AnalysisWorker, Job

if TYPE_CHECKING:
    from warp_harness.server.daemon_link import DaemonLink, LinkEvent
    from warp_harness.server.start_up_process import StartUpProcess
    from warp_harness.wire.messages import DaemonMessage

log = logging.getLogger("warp_harness.server")

SERVER_INFO = "warp-harness/serverInfo"
DAEMON_STATE = "warp-harness/daemonState"
START_DAEMON = daemon_control.START_DAEMON
STOP_DAEMON = daemon_control.STOP_DAEMON
# the start-up process's answers still due are given up this long after the analysis thread is warm
START_UP_ANSWER_CAP_S = 10.0
# how long the analysis thread waits for the start-up process's answers before warming up (none may come:
# no document was opened), and for the answer to a text before analysing it itself
START_UP_QUIET_CAP_S = 1.0
START_UP_WAIT_S = 2.0
# the size cap's bound in characters (analyses.py), read here by the tests
_MAY_BE_TOO_LARGE_CHARS = analyses.MAY_BE_TOO_LARGE_CHARS
# the code actions' kinds (server/actions.py's KINDS) and the stored cases' commands (replay_actions.py's):
# those modules are imported at their first request, not before the reply to `initialize`
CODE_ACTION_KINDS = [types.CodeActionKind.QuickFix, "source.fixAll.warp-harness"]
ACCEPT = "warp-harness.accept"
OPEN_CASE = "warp-harness.openCase"


def _version() -> str:
    from warp_harness import __version__

    return __version__


class WarpHarnessServer(LanguageServer):
    def __init__(self, analyser: Analyser | None = None) -> None:
        super().__init__(
            "warp-harness",
            _version(),
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=notebooks.SYNC,
        )
        self.tier = StaticTier(report=self.show_error_from_any_thread, analyser=analyser)
        self.worker = AnalysisWorker()  # the thread that owns the tier's analyser and workspace model
        self.collector = Collector()  # the cyclic collector runs after an analysis is published
        self.documents = Documents()  # per document: its analyses, diagnostics, cells, daemon result
        self.links: dict[Path, DaemonLink] = {}
        self.links_stopped = False  # at shutdown: a link start still pending (after start-up) is dropped
        self.daemon_flags: tuple[str, ...] = ()  # a started daemon's flags from the editor's settings
        self.roots: list[Path] = []
        self.daemon_state = "off"
        self.job_progress: dict[str, str] = {}
        self.published = 0
        self.tune = TuneResults()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pull_state = pull.PullState()  # server/pull.py
        # the forked start-up process (server/start_up_process.py), until the analysis thread is warm
        self.start_up: StartUpProcess | None = None
        self.start_up_pid: int | None = None
        self.start_up_published = 0  # publications of its answers
        self.stack_warm = False
        self.imported_at_initialize: tuple[str, ...] = ()  # the modules imported by the reply to `initialize`

    # ------------------------------------------------------------------ messages to the client

    def show_error(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))

    def show_error_from_any_thread(self, message: str) -> None:
        loop = self.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.show_error, message)
        else:
            self.show_error(message)

    def show_warning(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    # ------------------------------------------------------------------ transports (server/transport.py)

    def start_io(self, stdin: Any = None, stdout: Any = None) -> None:
        """LSP over stdin/stdout, through the size-capped reader and the protocol guard."""
        transport.start_stdio(self, stdin, stdout)

    def start_tcp(self, host: str, port: int, token: str | None = None) -> None:
        """LSP over TCP for one client that presents ``token`` (see transport.authenticate)."""
        if token is None:
            raise ValueError("a TCP server needs a token: clients must prove they are the user")
        transport.start_tcp(self, host, port, token)

    def from_daemon_thread(self, message: LinkEvent | DaemonMessage) -> None:
        """A daemon link's message (server/daemon_link.py), handled on the event loop."""
        if self.loop is not None and not self.loop.is_closed():
            from warp_harness.server import daemon_results

            self.loop.call_soon_threadsafe(daemon_results.handle, self, message)

    def set_daemon_state(self, state: str, message: str | None = None, path: str | None = None) -> None:
        self.daemon_state = state
        self.protocol.notify(DAEMON_STATE, {"state": state, "message": message, "path": path})

    # ------------------------------------------------------------------ start-up (server/start_up_process.py)

    def ask_start_up(
        self, uri: str, version: int | None, text: str, path: str, job: Job
    ) -> threading.Event | None:
        """While the analysis thread warms up, the start-up process analyses the text too: its records
        are published unless this process's own analysis (``job``) came first. What is set once it
        answered (or will not), None when it is not asked."""
        start_up = self.start_up
        if start_up is None or self.stack_warm or self.loop is None:
            return None

        def publish(records: list[Record]) -> None:
            document = self.workspace.text_documents.get(uri)
            # not when its own analysis came first, or the document changed since (or closed)
            if (
                not job.future.done()
                and self.worker.jobs.get(uri) is job
                and document is not None
                and document.version == version
                and document.source == text
            ):
                from warp_harness.engine import Analysis

                state = StaticState(version, text, Analysis(records, None, None))
                own = self.documents.for_uri(uri)
                own.static = own.from_start_up = state
                publishing.publish(self, uri)
                self.start_up_published += 1

        def answered(records: list[Record]) -> None:
            publish(records)
            self.end_start_up()

        # a large text's first screen comes first (a subset of the whole): published, then replaced; not to
        # a client that pulls (it would pull the part, and be told to pull again only once the whole is in)
        early = None if pull.client_pulls(self) else publish
        return start_up.ask(self.loop, uri, text, path, self.tier.overrides, self.roots, answered, early)

    def attach_start_up(self, start_up: StartUpProcess | None) -> None:
        """The start-up process `serve` forked (None: there is none)."""
        self.start_up = start_up
        self.start_up_pid = start_up.pid if start_up is not None else None

    def warm_up(self) -> None:
        """On the analysis thread, from start-up: load the analysis stack ahead of the first analysis.
        While the start-up process answers, after its answers to the documents opened so far (within
        ``START_UP_QUIET_CAP_S``): importing meanwhile would hold the GIL while the event loop runs
        the initialize handshake and publishes the answers, and take a core from the process."""
        start_up = self.start_up
        try:
            if start_up is not None:
                start_up.quiet.wait(START_UP_QUIET_CAP_S)
            self.tier.warm_up()
        finally:
            self.collector.start_up_done()
            self.stack_warmed()

    def start_up_quiet_if_idle(self) -> None:
        if self.start_up is not None:
            self.start_up.quiet_if_idle()

    def stack_warmed(self) -> None:
        """From the analysis thread: the analysis stack is warm, the start-up process can go."""
        self.stack_warm = True
        loop = self.loop  # None: `initialize` calls `start_up_over`
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.start_up_over)

    def start_up_over(self) -> None:
        """On the event loop, once the stack is warm: the start-up process goes when no answer is due,
        after ``START_UP_ANSWER_CAP_S`` at the latest."""
        self.end_start_up()
        if self.start_up is not None and self.loop is not None:
            self.loop.call_later(START_UP_ANSWER_CAP_S, partial(self.end_start_up, now=True))

    def end_start_up(self, now: bool = False) -> None:
        """Close the start-up process once the stack is warm and no answer is due (``now``: at once)."""
        start_up = self.start_up
        if start_up is not None and (now or (self.stack_warm and start_up.idle())):
            self.start_up = None
            start_up.close()

    def start_up_answered_by_own(self, uri: str) -> None:
        """This process's own analysis of ``uri`` is out: the start-up process's answer, still due, is it."""
        if self.start_up is not None:
            self.start_up.drop(uri)
            self.end_start_up()

    # ------------------------------------------------------------------ the analysis thread (worker.py)

    def analyse_in_worker(
        self, text: str, path: str, answer: threading.Event | None = None
    ) -> analyses.Analysed:
        """On the analysis thread: the analysis, the settings it used, and the documents to re-analyse if
        the text is new.
        After the start-up process's ``answer`` when it was asked: its diagnostics go out first, not
        slowed by this analysis holding the GIL (or by the two analyses sharing a loaded machine)."""
        if answer is not None:
            answer.wait(START_UP_WAIT_S)
        self.collector.pause()  # until the diagnostics are out (server/collector.py)
        analysis = self.tier.analyse(text, path)
        project = self.tier.project
        module = project.module_of(path) if project is not None else None
        dependents = self.tier.dependents(module) if module is not None else []
        return analyses.Analysed(analysis, dependents, self.tier.last_settings.get(path))

    def in_worker(self, work: Callable[[], Any]) -> None:
        """``work()`` on the analysis thread (it owns the analyser and the workspace model), in order."""

        def logged() -> None:
            try:
                work()
            except Exception:
                log.exception("work on the analysis thread failed")

        self.worker.call_soon(logged)

    def then_dependents(self, work: Callable[[], str | None], changed_uri: str | None) -> None:
        """``work()`` on the analysis thread, naming the module it changed; then the open documents
        whose launches resolved against that module are re-analysed."""
        if self.loop is None:
            return

        def dependents() -> list[str]:
            module = work()
            return self.tier.dependents(module) if module is not None else []

        def done(future: asyncio.Future[list[str]]) -> None:
            if future.cancelled():
                return
            if future.exception() is not None:
                log.error("a workspace-model update failed", exc_info=future.exception())
                return
            analyses.reanalyse_paths(self, future.result(), changed_uri)

        self.worker.call(self.loop, dependents).add_done_callback(done)

    # ------------------------------------------------------------------ configuration

    def apply_client_settings(self, payload: Any) -> bool:
        try:
            overrides = client_overrides(payload)
            self.daemon_flags = daemon_control.daemon_flags(payload)
        except ConfigError as exc:
            self.show_error(f"warp-harness: ignoring the editor's settings: {exc}")
            return False
        if overrides == self.tier.overrides:
            return False
        self.tier.set_overrides(overrides)
        return True

    def user_trusts(self) -> bool:
        """Trust comes from the editor's settings only: a workspace's own pyproject.toml saying
        `trust = true` is the workspace vouching for itself (a cloned repository can), so the
        server never starts a trusted daemon on it."""
        return self.tier.overrides.get("trust") is True

    def daemon_enabled(self, root: Path) -> bool:
        return self.tier.settings_for(str(root / "__init__.py")).daemon

    def info(self) -> dict[str, Any]:
        import resource

        rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {
            "warp_imported": "warp" in sys.modules,
            "documents": len(self.workspace.text_documents),
            "analyses": self.tier.analyses,
            "published": self.published,
            "daemon": self.daemon_state,
            "overrides": {
                k: (list(v) if isinstance(v, tuple) else v)
                for k, v in self.tier.overrides.items()
                if k != "severity"
            },
            "max_rss_kb": rss_kb,
            "imported_at_initialize": sorted(self.imported_at_initialize),
            "start_up": {
                "pid": self.start_up_pid,
                "running": self.start_up is not None,
                "published": self.start_up_published,
            },
        }


def build_server(analyser: Analyser | None = None) -> WarpHarnessServer:
    """The server with its LSP methods: each a line or two handing over to the module that owns it."""
    server = WarpHarnessServer(analyser)
    feature, command = server.feature, server.command

    feature(types.INITIALIZE)(session.initialize)
    feature(types.INITIALIZED)(lambda ls, _: session.initialized(ls))
    feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(session.folders_changed)
    feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(session.settings_changed)
    feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(session.files_changed)
    feature(types.SHUTDOWN)(lambda ls, _: session.shutdown(ls))

    feature(types.TEXT_DOCUMENT_DID_OPEN)(lambda ls, p: analyses.opened(ls, p.text_document.uri))
    feature(types.TEXT_DOCUMENT_DID_CHANGE)(lambda ls, p: analyses.schedule_text(ls, p.text_document.uri))
    feature(types.TEXT_DOCUMENT_DID_SAVE)(lambda ls, p: analyses.fire(ls, p.text_document.uri))
    feature(types.TEXT_DOCUMENT_DID_CLOSE)(lambda ls, p: analyses.closed(ls, p.text_document.uri))
    feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(
        lambda ls, p: analyses.opened(ls, p.notebook_document.uri, notebook=True)
    )
    feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(
        lambda ls, p: analyses.schedule_notebook(ls, p.notebook_document.uri)
    )
    feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)(lambda ls, p: analyses.fire(ls, p.notebook_document.uri))
    feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(notebooks.closed)

    feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=CODE_ACTION_KINDS))(
        _later("actions", "code_actions")
    )
    feature(types.TEXT_DOCUMENT_HOVER)(_later("hover", "hover"))
    pull.register(server, analyses.request)

    command(START_DAEMON)(lambda ls, *args: daemon_control.start_daemon(ls, args))
    command(STOP_DAEMON)(lambda ls, *args: daemon_control.stop_daemon(ls, args))
    command(ACCEPT)(_later("replay_actions", "accept", packed=True))
    command(OPEN_CASE)(lambda ls, *args: import_module(f"{__package__}.replay_actions").open_case(ls, args))
    feature(SERVER_INFO)(lambda ls, _: ls.info())
    return server


def _later(module: str, name: str, packed: bool = False) -> Callable[..., Awaitable[Any]]:
    """The coroutine handler ``name`` of server/``module``.py, imported at its first call (``packed``: a
    command's handler, taking its arguments as one tuple)."""

    async def handler(ls: WarpHarnessServer, *args: Any) -> Any:
        function = getattr(import_module(f"{__package__}.{module}"), name)
        return await (function(ls, args) if packed else function(ls, *args))

    return handler
