"""``workspace/diagnostic`` for the workspace's files the editor has not opened.

The files are those `check` would check in the workspace folders (``engine.iter_python_files``:
``.py`` and ``.ipynb``, the configured include/exclude), at most ``MAX_FILES`` of them. Each is
analysed as `check` analyses it (``engine.check_file``: regular files under the size cap only, a
FIFO or a binary file is a record, not a hang), on a thread of its own, never on the event loop.
Results are kept per path under the key (mtime, size, inode, settings), so an unchanged file is
not analysed again and its report keeps its result id (the client then gets ``unchanged``).

A pull waits at most ``BUDGET_S`` for the scan; the files not done by then are left out of the
answer, and when the scan finishes the server sends ``workspace/diagnostic/refresh`` so the client
pulls again. An open document (or open notebook) is reported from its text in the editor, by
server/pull.py; once closed, its file on disk is reported again.

Files are read as `check` reads them, through the path the walk found: a link that leaves the
workspace is reported (WH998), never followed, and one to another file of the workspace is that
file. Files are analysed alone (no workspace model): a launch of a kernel defined in another module is
judged once the file is opened. A notebook's records are placed in cells, which a file URI cannot
address: they sit at the start of the file, their message beginning with ``cell N:line:col:``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from warp_harness.config import ConfigError, load_settings
from warp_harness.record import Record
from warp_harness.server.convert import PositionMapper, to_diagnostic

log = logging.getLogger("warp_harness.server.pull_workspace")

MAX_FILES = 2000  # a huge workspace: the first files in walk order are reported, the rest are not
BUDGET_S = 1.0  # how long a workspace pull waits for analyses before answering with what is ready


@dataclass(frozen=True, eq=False, repr=False)
class FileReport:
    """A workspace file's last report: the key it was made for, its diagnostics and result id."""

    key: tuple[Any, ...]
    uri: str
    diagnostics: list[types.Diagnostic]
    result_id: str


@dataclass(eq=False, repr=False)
class WorkspaceFiles:
    """The last report of each workspace file, and the scan (one at a time) that renews them."""

    reports: dict[str, FileReport] = field(default_factory=dict)  # by path
    listed: list[str] = field(default_factory=list)  # the paths the last finished scan found
    analyses: int = 0
    scanning: asyncio.Future[list[str]] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


def _file_key(
    path: str, overrides: Mapping[str, Any], settings_of: dict[str, str] | None = None
) -> tuple[Any, ...] | None:
    """(mtime, size, inode, mode, settings) of ``path``; ``settings_of`` keeps each folder's
    settings for one scan (a pull must not parse the same pyproject.toml once per file)."""
    folder = os.path.dirname(path)
    try:
        st = os.stat(path)
        settings = settings_of.get(folder) if settings_of is not None else None
        if settings is None:
            settings = repr(load_settings(Path(folder), overrides))
            if settings_of is not None:
                settings_of[folder] = settings
    except (OSError, ConfigError):
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode, settings)


def _diagnostics(
    records: Sequence[Record], lines: Sequence[str], uri: str, encoding: str | None
) -> list[Any]:
    mapper = PositionMapper(lines, encoding)
    out: list[types.Diagnostic] = []
    for record in records:
        diagnostic = to_diagnostic(record, mapper, uri)
        if record.location.cell is not None:  # the file URI cannot address a cell: say where it is
            from warp_harness.output.model import position  # here: start-up skips the renderers' model

            diagnostic.message = f"{position(record.location)}: {diagnostic.message}"
            diagnostic.range = PositionMapper([], encoding).range(1, 0, 1, 0)
        out.append(diagnostic)
    return out


def _report_path(file: Path, root: Path) -> str:
    """The path ``file`` is reported under: a link to another file of the workspace under that
    file's path (reported once, and skipped while that file is open), any other path as found: a
    link out of the workspace is reported where it is, never under the path it leads to."""
    real = file.resolve()
    return str(real) if real.is_relative_to(root.resolve()) else str(file.absolute())


def _analyse(
    file: Path, path: str, key: tuple[Any, ...] | None, overrides: Mapping[str, Any], encoding: str | None
) -> FileReport | None:
    """``file`` analysed as `check` does, through the path found (not resolved): ``check_file``
    follows no link that leaves the workspace (one record instead), so a link to /etc/passwd or to
    another project's code never has that file read and quoted."""
    from warp_harness.engine import check_file
    from warp_harness.server.result_ids import result_id

    uri = from_fs_path(path)
    if key is None or uri is None:
        return None
    result = check_file(file, overrides, display_path=path)
    lines = list(result.source_lines or ())
    diagnostics = _diagnostics(result.records, lines, uri, encoding)
    return FileReport(key, uri, diagnostics, result_id(diagnostics, None))


def scan(
    files: WorkspaceFiles,
    roots: Sequence[Path],
    overrides: Mapping[str, Any],
    skip: Collection[str],
    encoding: str | None,
    deadline: float | None = None,
) -> list[str]:
    """Renew the reports of the workspace's files but those in ``skip`` (open in the editor); the
    paths found. Runs on a worker thread. ``deadline`` (monotonic) stops it early (for tests)."""
    from warp_harness.engine import iter_python_files

    found: list[str] = []
    settings_of: dict[str, str] = {}
    for root in roots:
        try:
            for file in iter_python_files([root], overrides):
                if len(found) >= MAX_FILES or (deadline is not None and time.monotonic() > deadline):
                    break
                path = _report_path(file, root)
                found.append(path)
                if path in skip:
                    continue
                key = _file_key(path, overrides, settings_of)
                known = files.reports.get(path)
                if known is not None and known.key == key:
                    continue
                try:
                    report = _analyse(file, path, key, overrides, encoding)
                except Exception:  # one file never stops the scan
                    log.exception("workspace diagnostics: analysis of %s failed", path)
                    continue
                with files.lock:
                    files.analyses += 1
                    if report is None:
                        files.reports.pop(path, None)
                    else:
                        files.reports[path] = report
        except (OSError, ConfigError) as exc:  # an unreadable folder or a broken pyproject.toml
            log.warning("workspace diagnostics: %s skipped: %s", root, exc)
    with files.lock:
        for gone in set(files.reports) - set(found):
            del files.reports[gone]
        files.listed = found
    return found


def start_scan(
    files: WorkspaceFiles,
    roots: Sequence[Path],
    overrides: Mapping[str, Any],
    skip: Collection[str],
    encoding: str | None,
) -> asyncio.Future[list[str]]:
    """:func:`scan` on a daemon thread (a long scan never holds up the server's exit), as a future
    of the running event loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[list[str]] = loop.create_future()

    def settle(result: list[str] | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result or [])

    def hand_over(result: list[str] | None, error: BaseException | None) -> None:
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: the server is exiting
            pass

    def run() -> None:
        try:
            found = scan(files, roots, overrides, skip, encoding)
        except BaseException as exc:  # handed to the loop, logged there
            hand_over(None, exc)
            return
        hand_over(found, None)

    threading.Thread(target=run, name="warp-harness workspace diagnostics", daemon=True).start()
    return future


__all__ = ["BUDGET_S", "MAX_FILES", "FileReport", "WorkspaceFiles", "scan", "start_scan"]
