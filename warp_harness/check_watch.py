"""`check --watch`: check, then check again whenever a Python file or notebook under the given paths is
saved, as ``ruff check --watch``; until interrupted (Ctrl-C: exit 0).

Saves are seen through the daemon's watcher (`warp_harness.daemon.watcher.Watcher`: debounced, editors'
three ways of saving, VCS and cache folders ignored); unchanged files come from the result cache, so a
re-run costs about what the changed files cost.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def watch_check(paths: Sequence[Path], run_once: Callable[[], int], *, debounce_s: float = 0.2) -> int:
    """Run ``run_once`` now and after every batch of saves under ``paths``; 0 when interrupted."""
    from warp_harness.daemon.watcher import Watcher

    changed = threading.Event()
    wanted = {p.resolve() for p in paths}
    roots = sorted({p if p.is_dir() else p.parent for p in wanted})

    def saved(path: Path, kind: str) -> None:
        del kind
        resolved = path.resolve()
        if any(resolved == w or w in resolved.parents for w in wanted):
            changed.set()

    _listen_for_ctrl_c()
    watchers = [Watcher(root, saved, debounce_s=debounce_s) for root in roots]
    for watcher in watchers:
        watcher.start()
    try:
        print(
            f"[{time.strftime('%H:%M:%S')}] Starting the checker in watch mode...",
            file=sys.stderr,
            flush=True,
        )
        run_once()
        sys.stdout.flush()
        while True:
            print("Watching for file changes.", file=sys.stderr, flush=True)
            while not changed.wait(0.5):  # a timed wait: Ctrl-C is seen at once, whatever the platform
                pass
            changed.clear()
            print(f"\n[{time.strftime('%H:%M:%S')}] File change detected...", file=sys.stderr, flush=True)
            run_once()
            sys.stdout.flush()
    except KeyboardInterrupt:
        return 0
    finally:
        for watcher in watchers:
            watcher.stop()


def _listen_for_ctrl_c() -> None:
    """Ctrl-C stops the watch even where the process was started with SIGINT ignored or blocked: a
    shell's background job (``check --watch &`` in a script) and some CI runners start it so, Python
    then keeps SIGINT ignored, and the watch, which only ends on Ctrl-C, could not be stopped but by
    SIGKILL (as ``ruff check --watch``, whose handler is installed whatever it inherited)."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
