"""`check --fix`/`--diff` on a notebook: the fixes written into its cells' sources, the notebook
checked again (``engine.check_notebook_bytes``) until no fix is left.

Above both the engine and warp_harness/notebooks.py (the format): the engine checks a notebook
through the format module, and fixing one checks it again through the engine."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Protocol

from warp_harness.config import load_settings
from warp_harness.engine import check_notebook_bytes
from warp_harness.notebooks import NotebookError, fix_records_in_cells, read_notebook, write_cells
from warp_harness.output.model import FileResult
from warp_harness.record import Record
from warp_harness.safe_read import read_regular_text


class FixSession(Protocol):
    """What `check --fix`/`--diff` (cli._Fixing) shares with :func:`fix_notebook`."""

    write: bool
    safe_only: bool
    overrides: dict[str, Any]
    table: Any
    total: int
    applied: dict[str, list[Record]]
    diffs: list[str]


def fix_notebook(session: FixSession, result: FileResult) -> FileResult:
    """`check --fix`/`--diff` on a notebook: fixes applied in the cells, re-checked until stable,
    written back into the JSON (only the edited cells' sources change)."""
    path = Path(result.path)
    original = read_regular_text(path)
    settings = load_settings(path, session.overrides)
    raw, first = original, result
    for _ in range(5):
        try:
            notebook = read_notebook(raw)
        except NotebookError:
            break
        sources = {c.number: c.source for c in notebook.cells}
        changed, chosen = fix_records_in_cells(sources, result.records, session.safe_only)
        if not changed:
            break
        try:
            new_raw = write_cells(raw, changed)
        except NotebookError:  # not laid out as nbformat 4 (an nbformat 3 file): report, do not write
            break
        session.total += len(chosen)
        session.applied.setdefault(result.path, []).extend(chosen)
        raw = new_raw
        result = check_notebook_bytes(raw.encode("utf-8"), result.path, settings, session.table)
    if raw != original:
        if session.write:
            path.write_text(raw, encoding="utf-8")
        else:
            session.diffs.append(_diff(original, raw, result.path))
    return result if session.write else first


def _diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
