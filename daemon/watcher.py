"""Watch a workspace for saved Python modules, the way real editors save them.

Editors save in three ways, all handled: write in place (modified), write a temporary
file and rename it over the target (moved, dest = target), delete and re-create
(deleted + created). Events are collected per path and delivered once the path has been
quiet for ``debounce_s``; the callback then sees ``"changed"`` if the file exists, else
``"deleted"``.

Two events say a save is complete: the file was closed after writing (inotify
``IN_CLOSE_WRITE``, watchdog's ``closed``) and a file was renamed onto the path (``moved``
with that destination). After one of those the path is delivered at once (``settle_s``, 0 by
default: the file holds the whole save the moment it is closed or renamed into place) instead
of after the full debounce, which remains for everything else: a write still open, a delete
that may be followed by a re-create, a file moved in from outside the tree, platforms without
close events, and the third save of a path to complete within ``STORM_S`` (a script or a
tool saving in a loop: the burst is delivered once it has been quiet for the debounce, not
save by save). Events after a delivery (an editor that also changes the mode)
start a new quiet period; the daemon coalesces the jobs (a save during a running job runs it
once more). Our own ``.warp-harness`` folder, VCS and cache folders, editor backups and swap
files never reach the callback.

Where the watches go: the workspace folder itself (not recursively) and, recursively,
each of its sub-folders except the ignored ones (``warp_harness.workspace.IGNORED_DIRS``). So the
top-level ``.warp-harness`` (every compile writes a dozen files and folders there: about 60
events per save), ``.git``, ``.venv``, ``node_modules`` ... are not watched at all, and a
watch costs one observer thread per top-level folder, not one per folder. A top-level
folder created later is watched from then on, and the modules already in it are seen.
Ignored folders deeper down are watched but their events are dropped.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from warp_harness.daemon.discovery import is_candidate_name, is_ignored
from warp_harness.workspace import IGNORED_DIRS

Callback = Callable[[Path, str], None]
SETTLE_S = 0.0
# a path's third completed save within this long waits for the debounce: people do not save
# three times in 50 ms (two: a save, then a tool's rewrite of it), a loop that rewrites the file does
STORM_S = 0.05


def _no_burst_coalescing() -> None:
    """Make watchdog hand each inotify read on at once.

    watchdog 7 holds a read that comes within 1 ms of the previous one for up to 1 ms more, to
    batch large bursts (a checkout) into fewer wake-ups. An editor's save is such a burst (the
    truncate, the write, the close): its close waited 1-3 ms in that window, a tenth of the
    daemon's fixed cost per save. The constants are module-level in ``watchdog.observers.inotify_c``;
    releases without them (older, or renamed) are left as they are."""
    try:
        from watchdog.observers import inotify_c
    except ImportError:  # not Linux
        return
    if hasattr(inotify_c, "_COALESCE_BURST_GAP_S"):
        inotify_c._COALESCE_BURST_GAP_S = 0.0


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory:
            self.watcher.folder_event(event)
            return
        if event.event_type in ("opened", "closed_no_write"):
            return
        src = event.src_path
        self.watcher.touch(
            Path(src if isinstance(src, str) else src.decode()), complete=event.event_type == "closed"
        )
        dest = getattr(event, "dest_path", "")
        if dest:
            self.watcher.touch(Path(dest if isinstance(dest, str) else dest.decode()), complete=True)


class Watcher:
    def __init__(
        self, root: Path, callback: Callback, *, debounce_s: float = 0.1, settle_s: float = SETTLE_S
    ) -> None:
        self.root = root.resolve()
        self.callback = callback
        self.debounce_s = debounce_s
        self.settle_s = min(settle_s, debounce_s)
        self._pending: dict[Path, float] = {}
        # when each path's last two saves completed
        self._completed: dict[Path, tuple[float, float]] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._observer: Any = Observer()
        self._handler = _Handler(self)
        self._watches: dict[Path, Any] = {}  # top-level folder -> its recursive watch
        self._watch_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="warp-harness-debounce", daemon=True)
        self.events_seen = 0
        self.delivered = 0

    def start(self) -> None:
        _no_burst_coalescing()
        self._observer.schedule(self._handler, str(self.root), recursive=False)
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                self._watch_folder(Path(entry.path), scan=False)
        self._observer.start()
        self._thread.start()

    def _watch_folder(self, folder: Path, *, scan: bool) -> None:
        """Watch a top-level folder recursively (unless ignored); ``scan``: it is new, so the
        modules written into it before the watch existed are touched."""
        if folder.parent != self.root or folder.name in IGNORED_DIRS or folder.is_symlink():
            return
        with self._watch_lock:
            if folder in self._watches:
                return
            try:
                self._watches[folder] = self._observer.schedule(self._handler, str(folder), recursive=True)
            except OSError:  # gone already
                return
        if scan:
            for dirpath, dirnames, filenames in os.walk(folder):
                dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
                for name in filenames:
                    self.touch(Path(dirpath) / name)

    def _unwatch_folder(self, folder: Path) -> None:
        with self._watch_lock:
            watch = self._watches.pop(folder, None)
        if watch is not None:
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError):
                pass

    def folder_event(self, event: FileSystemEvent) -> None:
        """A folder appeared, went or was renamed directly in the workspace folder."""

        def as_path(p: str | bytes) -> Path:
            return Path(p if isinstance(p, str) else p.decode())

        src = as_path(event.src_path)
        if event.event_type == "created":
            self._watch_folder(src, scan=True)
        elif event.event_type == "deleted":
            self._unwatch_folder(src)
            self._folder_gone(src)
        elif event.event_type == "moved":
            self._unwatch_folder(src)
            self._folder_gone(src)
            dest = getattr(event, "dest_path", "")
            if dest:
                self._watch_folder(as_path(dest), scan=True)

    def _folder_gone(self, folder: Path) -> None:
        """A folder was renamed or deleted: its path is delivered (``"deleted"``) so the consumer
        can forget what it knew under it. A top-level folder is watched by the root's watch, which
        is not recursive: no event came for the files that went with it (a ghost result each)."""
        try:
            folder.relative_to(self.root)
        except ValueError:
            return
        if folder == self.root or is_ignored(folder / "-", self.root):
            return
        with self._cond:
            self.events_seen += 1
            self._pending[folder] = time.monotonic() + self.debounce_s
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._observer.stop()
        self._observer.join(timeout=5)
        self._thread.join(timeout=5)

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def accepts(self, path: Path) -> bool:
        try:
            path = path if path.is_absolute() else self.root / path
            path.relative_to(self.root)
        except ValueError:
            return False
        return is_candidate_name(path) and not is_ignored(path, self.root)

    def touch(self, path: Path, *, complete: bool = False) -> None:
        """An event on ``path``: (re)start its quiet period (short when the save is ``complete``)."""
        if not self.accepts(path):
            return
        now = time.monotonic()
        quiet = self.debounce_s
        with self._cond:
            self.events_seen += 1
            if complete:
                before_last, last = self._completed.get(path, (-STORM_S, -STORM_S))
                if now - before_last >= STORM_S:
                    quiet = self.settle_s
                self._completed[path] = (last, now)
                if len(self._completed) > 4096:  # forget the old ones
                    self._completed = {p: t for p, t in self._completed.items() if now - t[1] < STORM_S}
            self._pending[path] = now + quiet
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                if not self._pending:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                due = [p for p, t in self._pending.items() if t <= now]
                if not due:
                    self._cond.wait(timeout=max(min(self._pending.values()) - now, 0.001))
                    continue
                for p in due:
                    del self._pending[p]
            for p in due:
                state = "changed" if p.is_file() else "deleted"
                self.delivered += 1
                try:
                    self.callback(p, state)
                except Exception:  # a failing consumer must not kill the watcher
                    pass
