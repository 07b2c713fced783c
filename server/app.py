"""The language server: LSP in, static-tier diagnostics and daemon results out.

Data flow: didOpen/didChange -> debounce -> StaticTier.analyse (the same engine as `check`) on the
analysis thread (worker.py; the event loop keeps answering meanwhile) -> records -> diagnostics
(convert.py) published from the event loop with the document's version, unless a newer version
arrived while it ran. The daemon's results arrive over its socket (daemon_link.py) and are published
next to them. Code actions, hovers and pulled diagnostics wait a little (``REQUEST_BUDGET_S``) for
the analysis of the text as it is now, then answer from the last completed one; nothing here
executes workspace code or imports Warp.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from warp_harness.config import ConfigError
from warp_harness.record import Record
from warp_harness.safe_read import read_regular_text
from warp_harness.server import actions, hover, notebooks, pull, transport
from warp_harness.server.analysis import Analyser, StaticTier
from warp_harness.server.collector import Collector
from warp_harness.server.convert import TUNE_SOURCE, DiagnosticCache, PositionMapper
from warp_harness.server.documents import DynamicState, StaticState
from warp_harness.server.options import SECTION, client_overrides
from warp_harness.server.text_document import lsp_lines, use_lsp_lines
from warp_harness.server.tuning import TuneResults, tuned_records
from warp_harness.server.worker import AnalysisWorker, Job, settled_within

if TYPE_CHECKING:
    from warp_harness.engine import Analysis
    from warp_harness.server.daemon_link import DaemonLink, LinkEvent
    from warp_harness.server.start_up_process import StartUpProcess
    from warp_harness.wire.messages import DaemonMessage, Report, StateChange

log = logging.getLogger("warp_harness.server")

SERVER_INFO = "warp-harness/serverInfo"
DAEMON_STATE = "warp-harness/daemonState"
START_DAEMON = "warp-harness.startDaemon"
STOP_DAEMON = "warp-harness.stopDaemon"
# an edit after this long a pause is analysed at once (after 1 ms, the event loop's timer resolution:
# changes sent together still arrive within it); edits closer together wait for a pause
LEADING_EDGE_S = 0.001
# how long a request (hover, code actions, pull diagnostics) waits for the analysis of the text as it is
# now before answering from the last completed one
REQUEST_BUDGET_S = 1.0
# the daemon links start once the analyses of start-up are out, or after this long at the latest
LINK_START_CAP_S = 2.0
# the start-up process's answers still due are given up this long after the analysis thread is warm
START_UP_ANSWER_CAP_S = 10.0
# how long the analysis thread waits for the start-up process's answers before warming up (none may come:
# no document was opened), and for the answer to a text before analysing it itself
START_UP_QUIET_CAP_S = 1.0
START_UP_WAIT_S = 2.0
# the documents an editor opens at start-up come with `initialized`, or within this long: if none did, the
# analysis thread warms up at once (a notebook, a pull, a file event wait for it)
START_UP_OPEN_GRACE_S = 0.05


@dataclass
class Analysed:
    """What the analysis thread hands back: the analysis, and the open documents' paths whose launches
    resolved against the analysed module (re-analysed when its text is new)."""

    analysis: Analysis
    dependents: list[str]


# no text of fewer characters (4 UTF-8 bytes at most each) is over the size cap, 8 MiB
# (`model.source.MAX_SOURCE_BYTES`): the modules that tell are imported only for a text that may be
_MAY_BE_TOO_LARGE_CHARS = 2 * 1024 * 1024


def _too_large(text: str, path: str) -> Analysed | None:
    """A document over the size cap `check` applies to files: one record instead of an analysis (an
    11 MiB document took 77 s and 5.7 GB), neither the analysis thread nor the start-up process
    analysing it. None when it is under the cap."""
    if len(text) <= _MAY_BE_TOO_LARGE_CHARS:
        return None
    from warp_harness.engine import Analysis
    from warp_harness.text_cap import document_too_large

    record = document_too_large(text, path)
    return None if record is None else Analysed(Analysis([record], None, None), [])


def _version() -> str:
    from warp_harness.cli import tool_version

    return tool_version()


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
        self.statics: dict[str, StaticState] = {}
        self.dynamics: dict[str, DynamicState] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.last_change: dict[str, float] = {}
        self.links: dict[Path, DaemonLink] = {}
        self.links_stopped = False  # at shutdown: a link start still pending (after start-up) is dropped
        self.roots: list[Path] = []
        self.daemon_state = "off"
        self.job_progress: dict[str, str] = {}
        self.published = 0
        self.published_pairs: dict[str, list[tuple[Record, types.Diagnostic, bool]]] = {}
        # per document, the diagnostics of its records by identity: a keystroke re-converts only the
        # records the incremental analysis made anew (server/convert.py)
        self.converted: dict[str, DiagnosticCache] = {}
        self.tune = TuneResults()
        self.loop: asyncio.AbstractEventLoop | None = None
        # per document, the text whose change was last passed on to the documents depending on it
        self.propagated: dict[str, str] = {}
        self.notebooks = notebooks.NotebookSupport(self)  # server/notebooks.py
        self.pull_state = pull.PullState()  # server/pull.py
        # the forked start-up process (server/start_up_process.py), until the analysis thread is warm
        self.start_up: StartUpProcess | None = None
        self.start_up_pid: int | None = None
        self.start_up_published = 0  # publications of its answers
        self.stack_warm = False
        # per document, its state while the published diagnostics are the start-up process's
        self.from_start_up: dict[str, StaticState] = {}

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

    def set_daemon_state(self, state: str, message: str | None = None, path: str | None = None) -> None:
        self.daemon_state = state
        self.protocol.notify(DAEMON_STATE, {"state": state, "message": message, "path": path})

    # ------------------------------------------------------------------ analysis and publication

    def _mapper(self, lines: Sequence[str]) -> PositionMapper:
        return PositionMapper(lines, self.workspace.position_encoding)

    def request_analysis(self, uri: str, force: bool = False) -> asyncio.Future[Any] | None:
        """Hand the document's text as it is now to the analysis thread (server/worker.py), unless the
        last analysis, done or running, is of this text; the running analysis, None when it is done.
        Its diagnostics are published from the event loop when it finishes, if the text is still current.
        ``force``: a new analysis even of the same text (the settings changed)."""
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        document = self.workspace.text_documents.get(uri)
        if document is None or document.path is None or self.loop is None or self.notebooks.owns_cell(uri):
            return None
        text, version, path = document.source, document.version, document.path
        current = self.statics.get(uri)
        if (
            not force
            and current is not None
            and current.version == version
            and current.text == text
            and self.from_start_up.get(uri) is not current  # else: this process's own analysis runs
        ):
            return None
        current_job = self.worker.jobs.get(uri)
        # set once the start-up process answered the text (or will not): its own analysis waits for it
        answer: list[threading.Event | None] = [None]
        too_large = _too_large(text, path)
        job = self.worker.submit(
            self.loop,
            uri,
            (version, text),
            (lambda: too_large)
            if too_large is not None
            else lambda: self._analyse_in_worker(text, path, answer[0]),
            lambda analysed: self._analysed(uri, version, text, analysed),
            reuse=not force,
        )
        if job is not current_job:  # a new analysis: the collector runs once it is out
            job.future.add_done_callback(lambda _: self.worker.call_soon(self.collector.after_analysis))
            if too_large is None:
                answer[0] = self._ask_start_up(uri, version, text, path, job)
        return None if job.future.done() else job.future

    def _ask_start_up(
        self, uri: str, version: int | None, text: str, path: str, job: Job
    ) -> threading.Event | None:
        """While the analysis thread warms up, the start-up process analyses the text too: its records
        are published unless this process's own analysis (``job``) came first. What is set once it
        answered (or will not), None when it is not asked."""
        start_up = self.start_up
        if start_up is None or self.stack_warm or self.loop is None:
            return None

        def answered(records: list[Record]) -> None:
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
                self.statics[uri] = self.from_start_up[uri] = state
                self.publish(uri)
                self.start_up_published += 1
            self.end_start_up()

        return start_up.ask(self.loop, uri, text, path, self.tier.overrides, self.roots, answered)

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

    async def settled_state(self, uri: str) -> StaticState | None:
        """The document's last completed analysis, after waiting up to ``REQUEST_BUDGET_S`` for the one
        of its current text: a request never waits out the analysis of a huge file."""
        await settled_within(self.request_analysis(uri), REQUEST_BUDGET_S)
        return self.statics.get(uri)

    def _analyse_in_worker(self, text: str, path: str, answer: threading.Event | None = None) -> Analysed:
        """On the analysis thread: the analysis, and the documents to re-analyse if the text is new.
        After the start-up process's ``answer`` when it was asked: its diagnostics go out first, not
        slowed by this analysis holding the GIL (or by the two analyses sharing a loaded machine)."""
        if answer is not None:
            answer.wait(START_UP_WAIT_S)
        self.collector.pause()  # until the diagnostics are out (server/collector.py)
        analysis = self.tier.analyse(text, path)
        project = self.tier.project
        module = project.module_of(path) if project is not None else None
        return Analysed(analysis, self.tier.dependents(module) if module is not None else [])

    def _analysed(self, uri: str, version: int | None, text: str, analysed: Analysed) -> None:
        """On the event loop: publish an analysis unless the document changed (or closed) since."""
        document = self.workspace.text_documents.get(uri)
        if document is None or document.version != version or document.source != text:
            return  # stale: the analysis of the newer text follows
        if self.start_up is not None:
            self.start_up.drop(uri)  # its answer, still due, is this one
            self.end_start_up()
        preliminary = self.from_start_up.pop(uri, None)
        # what the publication replaces is freed on the analysis thread once the diagnostics are out
        # (an Enter in an 8,000-kernel file: ~18 ms for the records below it, all moved)
        garbage: list[Any] = [self.statics.get(uri)]
        self.statics[uri] = StaticState(version, text, analysed.analysis)
        # the start-up process's diagnostics of this text, when they were the same, are not sent again
        same_text = preliminary is not None and preliminary.version == version and preliminary.text == text
        self.publish(uri, garbage, resend=not same_text)
        del preliminary
        self.collector.release(garbage)
        del garbage
        if self.propagated.get(uri) != text:  # a new text: the documents launching its kernels follow
            self.propagated[uri] = text
            self.reanalyse_paths(analysed.dependents, uri)

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
            self.reanalyse_paths(future.result(), changed_uri)

        self.worker.call(self.loop, dependents).add_done_callback(done)

    def reanalyse_paths(self, dependents: Sequence[str], changed_uri: str | None = None) -> None:
        """Re-analyse (and re-publish) the open documents among ``dependents`` (paths)."""
        paths = set(dependents)
        if not paths:
            return
        for uri, document in list(self.workspace.text_documents.items()):
            if uri == changed_uri or document.path is None or document.path not in paths:
                continue
            self.statics.pop(uri, None)
            self.worker.cancel(uri)  # its last analysis resolved against the module's old text
            self.in_worker(partial(self.tier.forget, document.path))
            self.schedule(uri)

    def publish(self, uri: str, garbage: list[Any] | None = None, resend: bool = True) -> None:
        """Publish the document's diagnostics; what they replace goes to ``garbage`` when given.
        Without ``resend``, diagnostics the same as the last published are not published again."""
        document = self.workspace.text_documents.get(uri)
        path = to_fs_path(uri)
        if path is None:
            return
        static = self.statics.get(uri)
        if document is not None:
            text, version, lines = document.source, document.version, document.lines
        else:  # a daemon result for a file the editor has not opened
            try:
                # regular files under the size cap only: a FIFO or /dev/zero must not stall the server
                text, version = read_regular_text(path, errors="replace"), None
            except OSError:
                return
            lines = lsp_lines(text)
        mapper = self._mapper(lines)
        cache = self.converted.setdefault(uri, DiagnosticCache())
        pairs: list[tuple[Record, types.Diagnostic, bool]] = []
        # each kind converted even when it has no records: the cache then lets go of the last ones
        records = static.analysis.records if static is not None else []
        pairs.extend(zip(records, cache.convert(records, mapper, uri), repeat(True)))
        dynamic = self.dynamics.get(str(Path(path).resolve()))
        records = dynamic.records if dynamic is not None else []
        pairs.extend(zip(records, cache.convert(records, mapper, uri, dynamic=True), repeat(False)))
        tuned = tuned_records(text, path, self.tune.for_path(self.roots, path))
        converted = cache.convert(tuned, mapper, uri, dynamic=True, source=TUNE_SOURCE)
        pairs.extend(zip(tuned, converted, repeat(False)))
        retired = cache.retired()
        if garbage is not None:
            garbage += [self.published_pairs.get(uri), retired]
        previous = self.published_pairs.get(uri)
        self.published_pairs[uri] = pairs
        diagnostics = [d for _, d, _ in pairs]
        if not resend and previous is not None and [d for _, d, _ in previous] == diagnostics:
            return
        self.published += 1
        pull.deliver(self, uri, diagnostics, version)  # pushed, or kept for a client that pulls

    def schedule(self, uri: str) -> None:
        """Analyse after the debounce delay; at once when the edit follows a pause."""
        document = self.workspace.text_documents.get(uri)
        if document is None or document.path is None or self.loop is None:
            return
        delay = self.tier.debounce_s(document.path)
        now = time.monotonic()
        idle = now - self.last_change.get(uri, float("-inf")) >= delay
        self.last_change[uri] = now
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        wait = LEADING_EDGE_S if idle and handle is None else delay
        self.pending[uri] = self.loop.call_later(wait, self._fire, uri)

    def _fire(self, uri: str, force: bool = False) -> None:
        self.pending.pop(uri, None)
        try:
            self.request_analysis(uri, force=force)
        except Exception:  # never let one document take the server down
            log.exception("analysis of %s failed", uri)

    def reanalyse_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            self.statics.pop(uri, None)
            document = self.workspace.text_documents[uri]
            if document.path is not None:
                self.in_worker(partial(self.tier.forget, document.path))
            self._fire(uri, force=True)
        self.notebooks.reanalyse_all()
        pull.workspace_changed(self)  # the unopened files' reports follow the settings too

    def forget(self, uri: str) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self.worker.cancel(uri)
        self.statics.pop(uri, None)
        self.from_start_up.pop(uri, None)
        self.published_pairs.pop(uri, None)
        self.converted.pop(uri, None)
        self.last_change.pop(uri, None)
        self.propagated.pop(uri, None)
        pull.forget(self, uri)
        path = to_fs_path(uri)
        if path is not None:
            tier = self.tier

            def closed(path: str = path) -> str | None:
                tier.forget(path)
                return tier.document_changed(path, None)  # the file on disk counts again

            self.then_dependents(closed, uri)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # ------------------------------------------------------------------ configuration

    def apply_client_settings(self, payload: Any) -> bool:
        try:
            overrides = client_overrides(payload)
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

    # ------------------------------------------------------------------ the daemon

    def connect_daemons_after_start_up(self) -> None:
        """Connect to the daemons once the documents opened so far are analysed (their diagnostics
        published, or dropped), at once when there are none; after ``LINK_START_CAP_S`` at the latest.
        The first diagnostics do not wait for the links (importing the daemon protocol, a thread per
        link, a connection attempt): their `daemonState` follows them. On the event loop."""
        if self.loop is None:
            return
        connected = False

        def connect() -> None:
            nonlocal connected
            if not connected:
                connected = True
                self.connect_daemons()

        started = [job.future for job in self.worker.jobs.values() if not job.future.done()]
        if not started:
            connect()
            return
        remaining = len(started)

        def settled(_: object) -> None:
            nonlocal remaining
            remaining -= 1
            if remaining == 0:
                connect()

        for future in started:  # only these: a user typing on does not hold the links off
            future.add_done_callback(settled)
        self.loop.call_later(LINK_START_CAP_S, connect)

    def connect_daemons(self) -> None:
        if self.links_stopped:
            return
        for root in self.roots:
            if self.daemon_enabled(root):
                self.link(root).start()

    def link(self, root: Path) -> DaemonLink:
        if root not in self.links:
            from warp_harness.server.daemon_link import DaemonLink  # a workspace without a daemon skips it

            self.links[root] = DaemonLink(root, self._from_daemon_thread)
        return self.links[root]

    def _from_daemon_thread(self, message: LinkEvent | DaemonMessage) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._on_daemon_message, message)

    def _on_daemon_message(self, message: LinkEvent | DaemonMessage) -> None:
        try:
            self.on_daemon_message(message)
        except Exception:
            log.exception("daemon message %s failed", type(message).__name__)

    def on_daemon_message(self, message: LinkEvent | DaemonMessage) -> None:
        """The link's news and the daemon's typed messages (wire/messages.py)."""
        from warp_harness.server.daemon_link import LinkEvent
        from warp_harness.wire.messages import Progress, Removed, Result, StateChange

        if isinstance(message, LinkEvent):
            self._on_link(message)
        elif isinstance(message, Result):
            self._on_result(message.report)
        elif isinstance(message, StateChange):
            self._on_job_state(message)
        elif isinstance(message, Progress):
            state = message.activity or (self.daemon_state if self.daemon_state != "idle" else "compiling")
            detail = " ".join(v for v in (message.kernel, message.device) if v)
            self.set_daemon_state(state, f"{message.stage} {detail}".strip(), None)
            for token in self.job_progress.values():
                self.work_done_progress.report(
                    token, types.WorkDoneProgressReport(message=f"{message.stage} {detail}")
                )
        elif isinstance(message, Removed):
            path = self._absolute(message.path)
            if path is not None and self.dynamics.pop(path, None) is not None:
                self.publish(from_fs_path(path) or path)

    def _on_link(self, event: LinkEvent) -> None:
        state = event.state
        if state == "connected":
            trusted = event.welcome is not None and event.welcome.trusted
            self.set_daemon_state("idle" if trusted else "untrusted", None)
        elif state == "disconnected":
            self.set_daemon_state("failed", f"lost the daemon: {event.message}")
            self.show_warning(
                f"warp-harness: lost the connection to the daemon ({event.message}); "
                "showing the static tier only"
            )
        elif state == "stopped":
            self.set_daemon_state("off", "the daemon stopped")
        elif state == "unavailable" and self.daemon_state not in ("starting",):
            self.set_daemon_state("off", "no daemon runs for this workspace")

    def _absolute(self, path: Any) -> str | None:
        if not isinstance(path, str):
            return None
        candidate = Path(path)
        if not candidate.is_absolute():
            for root in self.roots:
                if (root / candidate).exists():
                    candidate = root / candidate
                    break
            else:
                candidate = (self.roots[0] / candidate) if self.roots else candidate
        return str(candidate.resolve())

    def _on_result(self, report: Report) -> None:
        path = self._absolute(report.path)
        if path is None:
            return
        status = str(report.status or "ok")
        self.dynamics[path] = DynamicState(report.dynamic(), dict(report.kernels), status, time.time())
        self._end_progress(report.path)
        uri = from_fs_path(path) or path
        self.publish(uri)
        if status == "error":
            self.show_warning(f"warp-harness daemon: checking {Path(path).name} failed; see its diagnostics")
        if self.daemon_state not in ("untrusted",):
            self.set_daemon_state("failed" if status == "error" else "idle", None, path)

    def _on_job_state(self, message: StateChange) -> None:
        path, state = message.path, message.state
        capabilities = self.client_capabilities.window
        supports_progress = bool(capabilities and capabilities.work_done_progress)
        if state == "running":
            self.set_daemon_state("compiling", f"checking {path}", path)
            if supports_progress and path not in self.job_progress:
                token = f"warp-harness-daemon-{path}-{time.monotonic_ns()}"
                self.job_progress[path] = token
                title = f"warp-harness: checking {Path(path).name}"

                def begin(*_: Any) -> None:
                    self.work_done_progress.begin(
                        token, types.WorkDoneProgressBegin(title=title, cancellable=False)
                    )

                self.work_done_progress.create(token, callback=begin)
        elif state == "done":
            self._end_progress(path)

    def _end_progress(self, path: str) -> None:
        token = self.job_progress.pop(path, "")
        if token:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))

    def stop_links(self) -> None:
        self.links_stopped = True
        for link in self.links.values():
            link.close()
            if link.runs_spawned_daemon():
                link.stop_daemon(timeout=5.0)

    # ------------------------------------------------------------------ lookups for requests

    def record_for(self, uri: str, diagnostic: types.Diagnostic) -> tuple[Record, bool] | None:
        """The record behind a diagnostic the client sends back (and whether it is a dynamic one)."""
        for record, published, static in self.published_pairs.get(uri, []):
            if published.code == diagnostic.code and published.range == diagnostic.range:
                return record, not static
        return None

    def info(self) -> dict[str, Any]:
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
            "start_up": {
                "pid": self.start_up_pid,
                "running": self.start_up is not None,
                "published": self.start_up_published,
            },
        }


def build_server(analyser: Analyser | None = None) -> WarpHarnessServer:
    server = WarpHarnessServer(analyser)
    notebooks.register(server)
    pull.register(server)

    @server.feature(types.INITIALIZE)
    def initialize(ls: WarpHarnessServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        use_lsp_lines(ls.workspace)
        folders = params.workspace_folders or []
        roots = [to_fs_path(f.uri) for f in folders]
        if not roots and params.root_uri:
            roots = [to_fs_path(params.root_uri)]
        ls.roots = [Path(r).resolve() for r in roots if r]
        ls.apply_client_settings(params.initialization_options)
        if ls.stack_warm:  # warm before the loop was known (`stack_warmed`)
            ls.start_up_over()
        elif ls.start_up is not None:
            ls.start_up.open_workspace(ls.loop, ls.tier.overrides, ls.roots)
        ls.in_worker(partial(ls.tier.open_workspace, ls.roots))  # the workspace model: kernels across modules

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(
        ls: WarpHarnessServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        removed = {Path(p).resolve() for f in params.event.removed if (p := to_fs_path(f.uri))}
        added = [Path(p).resolve() for f in params.event.added if (p := to_fs_path(f.uri))]
        ls.roots = [r for r in ls.roots if r not in removed] + [r for r in added if r not in ls.roots]
        for root in removed:
            link = ls.links.pop(root, None)
            if link is not None:
                link.close()

    @server.feature(types.INITIALIZED)
    def initialized(ls: WarpHarnessServer, params: types.InitializedParams) -> None:
        # after the start-up work handed to the analysis thread (warm-up, the workspace model): by then
        # the client's didOpen has come, and the links wait for its analysis (the first diagnostics)
        loop = ls.loop
        if loop is not None:
            ls.worker.call_soon(lambda: loop.call_soon_threadsafe(ls.connect_daemons_after_start_up))
            if ls.start_up is not None:
                loop.call_later(START_UP_OPEN_GRACE_S, ls.start_up_quiet_if_idle)
        workspace = ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if watched and watched.dynamic_registration:
            options = types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[
                    types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                    types.FileSystemWatcher(glob_pattern="**/*.py"),  # the workspace model
                ]
            )
            registration = types.Registration(
                id="warp-harness-pyproject",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=options,
            )
            ls.client_register_capability(types.RegistrationParams(registrations=[registration]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: WarpHarnessServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.statics.pop(params.text_document.uri, None)
        ls._fire(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: WarpHarnessServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: WarpHarnessServer, params: types.DidSaveTextDocumentParams) -> None:
        ls._fire(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: WarpHarnessServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: WarpHarnessServer, params: types.DidChangeConfigurationParams
    ) -> None:
        payload = params.settings
        if not payload or payload == {SECTION: None}:
            workspace = ls.client_capabilities.workspace
            if workspace and workspace.configuration:
                items = [types.ConfigurationItem(section=SECTION)]
                answers = await ls.workspace_configuration_async(types.ConfigurationParams(items=items))
                payload = answers[0] if answers else None
        if ls.apply_client_settings(payload):
            ls.reanalyse_all()
            ls.connect_daemons()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: WarpHarnessServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            ls.reanalyse_all()
            return
        for change in params.changes:
            path = to_fs_path(change.uri)
            if path is None or not path.endswith(".py"):
                continue
            deleted = change.type == types.FileChangeType.Deleted
            ls.then_dependents(partial(ls.tier.file_changed, path, deleted=deleted), change.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, actions.FIX_ALL_KIND], resolve_provider=False
        ),
    )
    async def code_action(ls: WarpHarnessServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        if ls.notebooks.owns_cell(uri):
            return await ls.notebooks.code_actions(params)
        # for the text as it is now when its analysis is quick; else the last one's, its edits marked
        # with that text's version (a client applies none to a newer text)
        state = await ls.settled_state(uri)
        document = ls.workspace.text_documents.get(uri)
        if state is None or document is None:
            return []
        lines = state.analysis.source.lines if state.analysis.source else state.text.splitlines()
        mapper = ls._mapper(lines)
        only = params.context.only
        wanted_quickfix = not only or any(k.startswith(types.CodeActionKind.QuickFix) for k in only)
        wanted_fix_all = not only or any(
            actions.FIX_ALL_KIND.startswith(k) or k.startswith(actions.FIX_ALL_KIND) for k in only
        )
        result: list[types.CodeAction] = []
        if wanted_quickfix:
            for diagnostic in params.context.diagnostics:
                found = ls.record_for(uri, diagnostic)
                if found is None:
                    continue
                record, dynamic = found
                fix = actions.fix_action(record, diagnostic, mapper, uri, state.version)
                if fix is not None:
                    result.append(fix)
                if not dynamic:
                    suppress = actions.suppress_action(record, diagnostic, lines, mapper, uri, state.version)
                    if suppress is not None:
                        result.append(suppress)
        if wanted_fix_all:
            fix_all = actions.fix_all_action(state.text, state.analysis.records, mapper, uri, state.version)
            if fix_all is not None:
                result.append(fix_all)
        return result

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def on_hover(ls: WarpHarnessServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        state = await ls.settled_state(uri)
        if state is None or state.analysis.model is None:
            return None
        model = state.analysis.model
        document = ls.workspace.text_documents.get(uri)
        # the document's own lines when it is the text analysed (cutting 200,000 lines again: ~30 ms)
        lines = document.lines if document is not None and document.source is state.text else None
        mapper = ls._mapper(lines if lines is not None else lsp_lines(state.text))
        line = params.position.line + 1
        col = mapper.server_column(params.position.line, params.position.character)
        kernel = hover.kernel_at(model, line, col)
        if kernel is None:
            return None
        path = to_fs_path(uri)
        dynamic = ls.dynamics.get(str(Path(path).resolve())) if path else None
        info = dynamic.kernels.get(kernel.name) if dynamic else None
        return types.Hover(
            contents=types.MarkupContent(
                kind=types.MarkupKind.Markdown, value=hover.hover_markdown(model, kernel, info)
            )
        )

    @server.command(START_DAEMON)
    def start_daemon(ls: WarpHarnessServer, *args: Any) -> dict[str, Any]:
        root = _root_argument(ls, args)
        if isinstance(root, str):
            return {"state": ls.daemon_state, "message": root}
        ls.set_daemon_state("starting", f"starting the daemon for {root}")
        outcome = ls.link(root).spawn_daemon(trust=ls.user_trusts())
        return {"state": ls.daemon_state, "message": outcome}

    @server.command(STOP_DAEMON)
    def stop_daemon(ls: WarpHarnessServer, *args: Any) -> dict[str, Any]:
        root = _root_argument(ls, args)
        if isinstance(root, str):
            return {"state": ls.daemon_state, "message": root}
        stopped = ls.link(root).stop_daemon()
        ls.set_daemon_state("off", "daemon stopped" if stopped else "no daemon was running")
        return {"state": ls.daemon_state, "message": "stopped" if stopped else "not running"}

    @server.feature(SERVER_INFO)
    def server_info(ls: WarpHarnessServer, params: Any) -> dict[str, Any]:
        return ls.info()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: WarpHarnessServer, params: Any) -> None:
        ls.end_start_up(now=True)
        ls.stop_links()

    return server


def _root_argument(ls: WarpHarnessServer, args: tuple[Any, ...]) -> Path | str:
    """The workspace folder a daemon command names (the first one when it names none), or why
    there is none. Only the server's own workspace folders (from `initialize` and
    `didChangeWorkspaceFolders`) are accepted: a command must not start a daemon, trusted by
    the editor's settings, in a folder the client made up."""
    for arg in args:
        for candidate in arg if isinstance(arg, list) else [arg]:
            if isinstance(candidate, str) and candidate:
                path = to_fs_path(candidate) if candidate.startswith("file:") else candidate
                if not path:
                    continue
                root = Path(path).resolve()
                if root not in ls.roots:
                    log.warning("daemon command for %s refused: not a workspace folder", root)
                    return f"refused: {root} is not one of this server's workspace folders"
                return root
    return ls.roots[0] if ls.roots else "no workspace folder"
