"""Feedback: order findings, track per-kernel history across saves, render for a terminal.

Order: constraint > compile > crash > numeric > performance (``Record.sort_key``: stage,
then severity, then position). History: for every (file, kernel, rule) the number of
consecutive saves the rule fired on, kept in ``.warp-harness/history.msgpack`` so it
survives restarts; informational records (measurements, "validated") do not count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from warp_harness.daemon import protocol
from warp_harness.daemon.cache import OutsideWorkspaceError, atomic_write_bytes, read_msgpack_map, state_path
from warp_harness.daemon.results import ReportedRecord
from warp_harness.daemon.write_behind import LatestWrites
from warp_harness.record import Record, Severity
from warp_harness.wire.statuses import Tier

HISTORY_SCHEMA = 1
_COUNTED = (Severity.ERROR, Severity.WARNING)


def order(records: Iterable[Record]) -> list[Record]:
    return sorted(records, key=lambda r: r.sort_key())


def _streak_key(record: Record) -> str:
    return f"{record.location.kernel or ''}\x00{record.rule}"


class History:
    """Consecutive-save counters per file, kernel and rule.

    ``write_behind`` (the daemon's, like ``ResultCache``'s): ``update`` returns the streaks at
    once and the file is written after (`write_behind.LatestWrites`; the result is pushed
    first). The file always holds every file's counters, so the latest write holds every
    update. ``flush`` waits for it (``Engine.close``)."""

    def __init__(self, workspace: Path, *, write_behind: bool = False) -> None:
        self.workspace = workspace.resolve()
        self.path = self.workspace / ".warp-harness" / "history.msgpack"
        self._lock = threading.Lock()
        self.save_error: str | None = None  # the last failed save (read-only or escaping folder)
        self.write_behind = write_behind
        self._writes = LatestWrites("warp-harness-history-writer")
        try:
            data = read_msgpack_map(state_path(self.workspace, "history.msgpack"), HISTORY_SCHEMA)
        except OutsideWorkspaceError:
            data = None
        files = data.get("files") if data else None
        self.files: dict[str, dict[str, int]] = {}
        if isinstance(files, dict):
            for f, counters in files.items():
                if isinstance(counters, dict):
                    self.files[str(f)] = {str(k): int(v) for k, v in counters.items() if isinstance(v, int)}

    def update(self, path: str, records: Sequence[Record]) -> dict[str, int]:
        """Record one save of ``path``; returns {streak key: consecutive saves} for its findings."""
        with self._lock:
            previous = self.files.get(path, {})
            current: dict[str, int] = {}
            for r in records:
                if r.severity in _COUNTED:
                    key = _streak_key(r)
                    if key not in current:
                        current[key] = previous.get(key, 0) + 1
            self.files[path] = current
            if self.write_behind:
                # every write packs the counters as they are then: the latest write holds every update
                self._writes.submit("history", self._write_current)
            else:
                self._save(protocol.packb({"schema": HISTORY_SCHEMA, "files": self.files}))
            return current

    def _write_current(self) -> None:
        with self._lock:
            try:
                data = protocol.packb({"schema": HISTORY_SCHEMA, "files": self.files})
            except Exception as exc:
                self.save_error = f"{type(exc).__name__}: {exc}"
                return
        self._save(data)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the latest counters are written (or their write failed); False after
        ``timeout``."""
        return self._writes.flush(timeout)

    def streak(self, path: str, record: Record) -> int:
        return self.files.get(path, {}).get(_streak_key(record), 0)

    def _save(self, data: bytes) -> None:
        """Write the packed counters; a folder that cannot be written (read-only, deleted and
        not re-creatable, a symlink out of the workspace) keeps them in memory only."""
        try:
            atomic_write_bytes(state_path(self.workspace, "history.msgpack"), data, durable=False)
        except OSError as exc:
            self.save_error = f"{type(exc).__name__}: {exc}"
        else:
            self.save_error = None


def reported(record: Record, streaks: dict[str, int], tier: Tier = Tier.DYNAMIC) -> ReportedRecord:
    """``record`` with its tier and ``streak`` (saves in a row it fired)."""
    return ReportedRecord(record, tier, streaks.get(_streak_key(record), 0))


def render_text(path: str, records: Sequence[dict[str, Any]]) -> str:
    """Terminal lines ``path:line:col: severity[rule] message`` with hints and streaks."""
    lines = []
    for d in records:
        loc = d["location"]
        streak = d.get("streak") or 0
        suffix = f"  (fired {streak} saves in a row)" if streak >= 2 else ""
        lines.append(
            f"{loc['path']}:{loc['line']}:{loc['col'] + 1}: "
            f"{d['severity']}[{d['rule']}] {d['message']}{suffix}"
        )
        if d.get("hint"):
            first = str(d["hint"]).splitlines()[0]
            lines.append(f"    hint: {first}")
    if not lines:
        lines.append(f"{path}: no findings")
    return "\n".join(lines)
