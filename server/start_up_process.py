"""The start-up process: the first diagnostics of the documents opened while the server starts.

Left alone, start-up is serial work on one core: the server imports pygls and lsprotocol (~300 ms), then
its analysis thread imports the analysis stack (~60 ms) and analyses the first document, all behind one
GIL. So `serve` forks this process first thing, while it is still single-threaded (:func:`fork`): on
the other core, while the parent imports pygls, the fork opens the result cache and then answers for
the documents the parent asks it to until the parent's own stack is warm. Requests and
answers travel over two private pipes (length-prefixed pickles between two copies of this program:
nothing on disk, no socket); an answer is the records the parent publishes as it would its own.

The parent's analysis thread still warms up (after the answers: meanwhile it would hold the GIL the event
loop needs to publish them) and analyses each document itself (edits, hovers and code actions need its
model); the server publishes that again only when it differs. Once the parent's stack
is warm and no answer is due, it closes the pipes and the fork exits at their end, as it does when the
parent dies; the parent reaps it. Anything amiss (no fork, the fork died, a malformed answer) and the
parent goes on without it. The fork runs the same static analysis only, never workspace code.

What it analyses it keeps in the user's result cache (`warp_harness/check_cache.py`, private to the user,
never in the workspace), keyed by the text, its path, the settings and the installed code, with the
digests of the modules its launches resolved against: a document opened at an earlier start, unchanged
with its modules, is answered from there without an analysis (newton's 10k-line steel solver: its first
diagnostics no longer wait for the ~350 ms analysis). The parent's own analysis still follows.

Such an answer takes no warm-up and, with the entry's stamp (`server/start_up_stamps.py`: where its
modules resolved, and the folders the workspace model read), not even the workspace model: on a loaded
machine every millisecond of CPU this process spends before its answer delays the first diagnostics, the
parent's share of the CPU included (processes of one session share one scheduling group where autogroup
is on, as on desktop kernels). So on a busy machine the process imports the analysis stack and indexes
the workspace only when an answer needs them (no entry, or a stamp that no longer holds); with a core to
spare (`spare_core`), or with no answer kept in the cache yet (`_answers_kept`), it does both ahead, while
the parent imports pygls, for a document it must analyse; on a busy machine the index waits for a document
already on its way (`INDEX_WAIT_S`): a large one's first screen, judged from its slice alone
(`warp_harness/first_screen.py`, `_sliced_first_screen`), goes out before it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from warp_harness.check_cache import CheckCache
    from warp_harness.model.project import ProjectIndex
    from warp_harness.record import Record
    from warp_harness.server.analysis import StaticTier

# whom an answer is handed: the records of the analysis asked for
Answered = Callable[["list[Record]"], None]
_HEADER = 8  # bytes of a frame's length
_WIDE_PIPE_BYTES = 1 << 20  # the requests' pipe buffer (`_widen`)


def fork() -> StartUpProcess | None:
    """Fork the start-up process, or None where there is no fork (or threads already run: a fork would
    copy their locks held)."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    requests_r, requests_w = os.pipe()
    answers_r, answers_w = os.pipe()
    _widen(requests_w)  # a large document in one write, not a 64 KiB chunk per wake-up of the process
    try:
        pid = os.fork()
    except OSError:
        for fd in (requests_r, requests_w, answers_r, answers_w):
            os.close(fd)
        return None
    if pid == 0:  # the fork: never returns
        code = 1
        try:
            os.close(requests_w)
            os.close(answers_r)
            _own_session()
            _leave_stdio()
            _serve(requests_r, answers_w)
            code = 0
        finally:
            os._exit(code)  # none of the parent's exit handlers or buffers
    os.close(requests_r)
    os.close(answers_w)
    return StartUpProcess(pid, requests_w, answers_r)


def _widen(pipe: int) -> None:
    """Make ``pipe``'s buffer as large as an unprivileged process may (Linux, 1 MiB by default): the
    text of a large document goes to the process in one write. With the default 64 KiB, newton's 380 KB
    steel solver took six, each waiting for the process to be scheduled and read the last one (on a
    loaded machine, milliseconds each). Where that cannot be done, the frames go in chunks as before."""
    import fcntl

    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is None:
        return
    try:
        limit = int(_read_text("/proc/sys/fs/pipe-max-size") or 0)
        fcntl.fcntl(pipe, setpipe, min(limit, _WIDE_PIPE_BYTES) or _WIDE_PIPE_BYTES)
    except (OSError, ValueError):
        pass


def _own_session() -> None:
    """A session of its own: where the scheduler groups processes by session (autogroup, as on desktop
    kernels), this process gets a share of the CPU of its own instead of taking it from the server's, whose
    imports and reply to `initialize` it slowed on a busy machine. It still ends with the server: at the end
    of its pipes (`_serve`)."""
    try:
        os.setsid()
    except OSError:
        pass


def _leave_stdio() -> None:
    """The LSP stdio is the parent's: a client must see their end when the parent exits."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _serve(requests: int, answers: int) -> None:
    """The fork's one job: answer the parent's requests until their end of file; the analysis stack's
    dataclasses made from the code an earlier start kept (`generated_code.kept_dataclasses`), what this
    start compiled kept once the first answer is out."""
    from warp_harness.server.generated_code import kept_dataclasses

    with kept_dataclasses() as code:
        _answer(requests, answers, code.save)


def _answer(requests: int, answers: int, answered: Callable[[], None]) -> None:
    from warp_harness.server.analysis import StaticTier

    tier = StaticTier(report=lambda message: None)  # the parent reports what its own analysis meets
    cache = _result_cache()
    if cache is not None:  # what an answer from the cache reads, imported while the parent imports pygls
        from warp_harness import safe_read  # noqa: F401
        from warp_harness.server import start_up_stamps  # noqa: F401
    workspace = _Workspace(tier)
    # with no answer in the cache (none made yet, or no cache), every document must be analysed: the stack
    # and the workspace model are needed, and made ahead on a busy machine too
    spare = spare_core(_read_text("/proc/pressure/cpu"), _load_average(), os.cpu_count() or 1)
    ahead = cache is None or not _answers_kept(cache) or spare
    if ahead:
        tier.warm_up()
    while (request := _receive(requests)) is not None:
        ident, text, path, overrides, roots = request
        if overrides != tier.overrides:
            tier.set_overrides(overrides)
        workspace.roots = roots  # the parent's workspace model, so launches across modules are judged
        if text is None:  # only the workspace, ahead of the first document
            # on a busy machine, not ahead of a document already on its way: a large one's first screen
            # needs no workspace model (`_sliced_first_screen`), and this process's CPU is the parent's
            if ahead and (spare or not _request_within(requests, INDEX_WAIT_S)):
                workspace.model()
            continue

        def early(records: list[Record], ident: int = ident) -> None:
            try:
                _send(answers, (ident, records, True))
            except OSError:  # the parent is gone: the whole answer's send tells
                pass

        try:
            records: list[Record] | None = _records(workspace, cache, text, path, early)
        except Exception:
            records = None
        try:
            _send(answers, (ident, records))
        except BrokenPipeError:  # the parent is gone, or done with this process
            return
        answered()


# how long a busy machine's process waits for a document before it indexes the workspace ahead of it: the
# documents an editor opens at start-up follow the reply to `initialize` (under load, ~0.1 s after the
# request that asks for the index)
INDEX_WAIT_S = 0.5


def _request_within(requests: int, seconds: float) -> bool:
    """Whether a request is readable within ``seconds``."""
    import select

    try:
        return bool(select.select([requests], [], [], seconds)[0])
    except (OSError, ValueError):
        return False


# the scope of the entries this process writes in the user's result cache (`check_cache.CheckCache.key`):
# a text analysed as the server does, in its workspace model, under its path and the client's settings
SCOPE = "server"


def spare_core(pressure: str | None, load_average: float | None, cores: int) -> bool:
    """Whether the machine has a core to spare now: from the kernel's CPU pressure (``pressure``, the text
    of /proc/pressure/cpu: runnable tasks waited for a CPU less than 5% of the last 10 s), else from the
    load average (below the cores less one); with neither known, yes."""
    if pressure:
        for line in pressure.splitlines():
            fields = dict(field.split("=", 1) for field in line.split()[1:] if "=" in field)
            if line.startswith("some ") and "avg10" in fields:
                try:
                    return float(fields["avg10"]) < 5.0
                except ValueError:
                    break
    if load_average is not None:
        return load_average < cores - 1
    return True


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as file:  # bytes: a text file's codec is one more import
            return file.read(4096).decode("ascii")
    except (OSError, ValueError):
        return None


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _answers_kept(cache: CheckCache) -> bool:
    """Whether ``cache`` may hold an answer of this process: it holds a stamp (`start_up_stamps`, written
    with every answer it stores)."""
    from warp_harness.server.start_up_stamps import FOLDER

    try:
        with os.scandir(cache.root / FOLDER) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def _result_cache() -> CheckCache | None:
    """The user's result cache (`warp_harness/check_cache.py`), or None when it cannot be used. Its key
    names the builtin table by `cached_identity`, read from the table's cache file without decoding it
    (~20 ms of CPU less before an answer from the cache); the table is loaded when that is not known."""
    try:
        from warp_harness.builtins.cache_files import cached_identity
        from warp_harness.check_cache import open_cache

        identity = cached_identity()
        if identity is None:
            from warp_harness.builtins import load_table

            identity = load_table().identity
        return open_cache(identity)
    except Exception:
        return None


class _Workspace:
    """The analyser of this process and its workspace model, indexed on first need (`model`)."""

    def __init__(self, tier: StaticTier) -> None:
        self.tier = tier
        self.roots: list[str] = []
        self._indexed: list[str] | None = None  # the roots of the model, None before it is made
        self.texts: dict[str, str] = {}  # the documents asked about, by path: open in the client

    def model(self) -> ProjectIndex | None:
        """The workspace model of the current roots, the documents asked about in place of their files."""
        if self._indexed != self.roots:
            self._indexed = list(self.roots)
            self.tier.open_workspace([Path(root) for root in self.roots])
            for path, text in self.texts.items():
                self.tier.document_changed(path, text)
        return self.tier.project


# a text this long (newton's 10k-line steel solver: 380 KB, ~330 ms of analysis) gets the records of its
# first screen ahead of the rest when it must be analysed (`_analysed`); below it, the whole takes little
# more than the parse and model that this costs again
EARLY_MIN_CHARS = 64 * 1024
# the lines an editor shows of a file it opens (its first screen): the kernels starting there
FIRST_SCREEN_LINES = 100


def _records(
    workspace: _Workspace,
    cache: CheckCache | None,
    text: str,
    path: str,
    early: Answered = lambda records: None,
) -> list[Record]:
    """The records of ``text`` as the server analyses it: from the result cache when it holds them for
    this text, path and settings and the modules its launches resolved against are unchanged (a large file
    opened again is not analysed again before its first diagnostics), else analysed and stored. Whether
    they are unchanged is told by the entry's stamp when it still holds, else by the workspace model.
    ``early`` is handed the first screen's records of a large text analysed here, ahead of the whole."""
    from warp_harness.server import start_up_stamps

    tier = workspace.tier
    workspace.texts[path] = text
    once = _Once(early)
    if cache is None:
        _sliced_first_screen(tier, text, path, once)
        workspace.model()
        return _analysed(tier, text, path, once)
    key = cache.key(text.encode("utf-8", "surrogatepass"), path, tier.settings_for(path), SCOPE)
    stamps = cache.root / start_up_stamps.FOLDER
    current = start_up_stamps.digests(stamps, key, workspace.roots, workspace.texts)
    if current is not None and (stored := cache.get(key, current)) is not None:
        return list(stored)
    _sliced_first_screen(tier, text, path, once)  # ahead of the workspace model and the whole's parse
    project = workspace.model()
    tier.document_changed(path, text)  # the other modules' digests are read with this text in place
    asked: list[str] = []  # the entry's modules (on a hit, all of them are asked)

    def digest(module: str) -> str:
        asked.append(module)
        return project.digest(module) if project is not None else ""

    stored = cache.get(key, digest if project is not None else None)
    deps: Iterable[str] | None = asked
    if stored is None:
        tier.deps.pop(path, None)
        records = _analysed(tier, text, path, once)
        deps = tier.deps.get(path)
        if deps is not None:  # analysed in the workspace model, not in the fallback after an error
            cache.put(key, tuple(records), deps)
    else:
        records = list(stored)
    if deps is not None and project is not None:  # the next start needs no model for this entry
        start_up_stamps.write(stamps, key, workspace.roots, project, deps)
    return records


class _Once:
    """Whom an early answer is handed, once: the first screen from the slice (`_sliced_first_screen`),
    else from the whole's model."""

    def __init__(self, hand: Answered) -> None:
        self._hand: Answered | None = hand

    @property
    def handed(self) -> bool:
        return self._hand is None

    def __call__(self, records: list[Record]) -> None:
        hand, self._hand = self._hand, None
        if hand is not None:
            hand(records)


def _sliced_first_screen(tier: StaticTier, text: str, path: str, early: _Once) -> None:
    """For a large text, hand ``early`` the records of the kernels on its first screen from a parse of
    its statements up to there (`warp_harness.first_screen`: a few milliseconds where the whole's parse
    and model take ~100), where the rest cannot change them; else the whole's model hands them on."""
    if len(text) < EARLY_MIN_CHARS:
        return
    from warp_harness.builtins import load_table
    from warp_harness.first_screen import first_screen_records

    try:
        records = first_screen_records(text, path, tier.settings_for(path), load_table(), FIRST_SCREEN_LINES)
    except Exception:  # the whole's analysis reports what went wrong
        return
    if records is not None:
        early(records)


def _analysed(tier: StaticTier, text: str, path: str, early: _Once) -> list[Record]:
    """``tier``'s analysis of ``text``; for a large text, its first screen's records handed to ``early``
    once its model is built (`IncrementalAnalyser.analyse`: a subset of the whole, which replaces them)."""
    if len(text) >= EARLY_MIN_CHARS and not early.handed:
        return tier.analyse(text, path, (FIRST_SCREEN_LINES, early)).records
    return tier.analyse(text, path).records


def _receive(fd: int) -> Any:
    header = _read_exactly(fd, _HEADER)
    if header is None:
        return None
    body = _read_exactly(fd, int.from_bytes(header, "little"))
    import pickle

    return None if body is None else pickle.loads(body)


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = os.read(fd, size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def _send(fd: int, message: Any) -> None:
    data = _frame(message)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _frame(message: Any) -> bytes:
    import pickle  # not before the reply to `initialize`: the first request follows it

    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(body).to_bytes(_HEADER, "little") + body


class StartUpProcess:
    """The parent's end: requests written and answers read without blocking, on the event loop."""

    def __init__(self, pid: int, requests: int, answers: int) -> None:
        self.pid = pid
        self._requests = requests
        self._answers = answers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsent = bytearray()
        self._received = bytearray()
        # per request: its key, whom to hand the answer, and what is set once it is settled; whom to hand
        # an early answer (the first screen's records of a large text, ahead of the whole)
        self._due: dict[int, tuple[str, Answered, threading.Event]] = {}
        self._early: dict[int, Answered] = {}
        self._next = 0
        self.closed = False
        # set once the answers asked for so far are in (or never to be), and when it is closed
        self.quiet = threading.Event()

    def ask(
        self,
        loop: asyncio.AbstractEventLoop,
        key: str,
        text: str,
        path: str,
        overrides: Mapping[str, Any],
        roots: list[Path],
        answered: Answered,
        early: Answered | None = None,
    ) -> threading.Event | None:
        """Ask for the analysis of ``text`` (as ``path``, with the client's ``overrides``, in the workspace
        of ``roots``); ``answered`` is called on ``loop`` with its records, and before it ``early`` with
        those of the first screen when the process sends them ahead (a subset of the whole). What this
        returns is set once the request is settled: answered, dropped, or never to be. None: the process is
        gone."""
        settled = threading.Event()
        if not self._request(loop, text, path, overrides, roots):
            return None
        self._due[self._next] = (key, answered, settled)
        if early is not None:
            self._early[self._next] = early
        self.quiet.clear()
        _ahead_of_answers()
        return settled

    def open_workspace(
        self, loop: asyncio.AbstractEventLoop, overrides: Mapping[str, Any], roots: list[Path]
    ) -> None:
        """Index the workspace folders ``roots`` ahead of the first request (indexing a large one takes
        tens of milliseconds)."""
        self._request(loop, None, "", overrides, roots)

    def _request(
        self,
        loop: asyncio.AbstractEventLoop,
        text: str | None,
        path: str,
        overrides: Mapping[str, Any],
        roots: list[Path],
    ) -> bool:
        if self.closed:
            return False
        try:
            if self._loop is None:
                self._loop = loop
                os.set_blocking(self._requests, False)
                os.set_blocking(self._answers, False)
                loop.add_reader(self._answers, self._readable)
            self._next += 1
            request = (self._next, text, path, dict(overrides), [str(root) for root in roots])
            self._unsent += _frame(request)
            self._writable()
        except Exception:  # not a loop that watches pipes, or a request that does not pickle
            self.close()
            return False
        return not self.closed

    def drop(self, key: str) -> None:
        """Forget the requests for ``key`` (its own analysis came first): their answers are not handed on."""
        for ident in [ident for ident, due in self._due.items() if due[0] == key]:
            self._early.pop(ident, None)
            self._due.pop(ident)[2].set()
        self.quiet_if_idle()

    def idle(self) -> bool:
        """No answer is due."""
        return not self._due

    def quiet_if_idle(self) -> None:
        """Set :attr:`quiet` when no answer is due (none may ever be: no document was opened)."""
        if not self._due:
            self.quiet.set()

    def _writable(self) -> None:
        assert self._loop is not None
        try:
            written = os.write(self._requests, self._unsent) if self._unsent else 0
        except BlockingIOError:
            written = 0
        except OSError:  # the process died
            self.close()
            return
        del self._unsent[:written]
        if self._unsent:
            self._loop.add_writer(self._requests, self._writable)
        else:
            self._loop.remove_writer(self._requests)

    def _readable(self) -> None:
        try:
            chunk = os.read(self._answers, 1 << 20)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # the process died
            self.close()
            return
        self._received += chunk
        while len(self._received) >= _HEADER:
            size = int.from_bytes(self._received[:_HEADER], "little")
            if len(self._received) < _HEADER + size:
                break
            body = bytes(self._received[_HEADER : _HEADER + size])
            del self._received[: _HEADER + size]
            try:
                import pickle

                # (ident, records), or (ident, records, True): the early answer, the whole to follow
                ident, records, *ahead = pickle.loads(body)
                if records is not None and not isinstance(records, list):
                    raise TypeError(type(records))
                if ahead not in ([], [True]) or (ahead and records is None):
                    raise ValueError(ahead)
            except Exception:  # a malformed answer: the process is no longer trusted to give any
                self.close()
                return
            if ahead:
                early = self._early.get(ident) if ident in self._due else None
                if early is not None and records is not None:
                    early(records)
                if self.closed:
                    return
                continue
            self._early.pop(ident, None)
            due = self._due.pop(ident, None)
            if due is not None:
                try:
                    if records is not None:
                        due[1](records)
                finally:
                    due[2].set()
                    self.quiet_if_idle()
            if self.closed:  # closed by whom it told
                return

    def close(self) -> None:
        """Close the pipes (the process exits at their end; stopped at once if it still works on a
        request) and reap it. Answers still due are not handed on."""
        if self.closed:
            return
        self.closed = True
        busy = bool(self._due or self._unsent)
        for due in self._due.values():
            due[2].set()
        self._due.clear()
        self._early.clear()
        self.quiet.set()
        if self._loop is not None:
            self._loop.remove_reader(self._answers)
            self._loop.remove_writer(self._requests)
        os.close(self._requests)
        os.close(self._answers)
        if busy:
            try:
                os.kill(self.pid, signal.SIGKILL)  # not reaped yet: the pid is still this process's
            except OSError:
                pass
        reaper = threading.Thread(target=_reap, args=(self.pid,), name="warp-harness reaper", daemon=True)
        reaper.start()


def _ahead_of_answers() -> None:
    """Import what handing on an answer imports (the analysis it is published as) while the process
    works on it: ~3 ms of CPU after the request is written, not after the answer is read."""
    import warp_harness.engine  # noqa: F401


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


__all__ = ["StartUpProcess", "fork"]
