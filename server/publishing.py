"""A text document's diagnostics: its last analysis, the daemon's last result and `tune`'s suggestions,
converted (server/convert.py, reusing the diagnostics of records that did not move) and handed to
server/pull.py (pushed, or kept for a client that pulls). Notebooks publish per cell
(server/notebooks.py)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from warp_harness.safe_read import read_regular_text
from warp_harness.server import pull
from warp_harness.server.convert import TUNE_SOURCE, PositionMapper
from warp_harness.server.documents import Document, Published
from warp_harness.server.text_document import lsp_lines
from warp_harness.server.tuning import tuned_records

if TYPE_CHECKING:
    from warp_harness.server.app import WarpHarnessServer


def mapper(ls: WarpHarnessServer, lines: Sequence[str]) -> PositionMapper:
    return PositionMapper(lines, ls.workspace.position_encoding)


def publish(ls: WarpHarnessServer, uri: str, garbage: list[Any] | None = None, resend: bool = True) -> None:
    """Publish the document's diagnostics; what they replace goes to ``garbage`` when given.
    Without ``resend``, diagnostics the same as the last published are not published again."""
    text_document = ls.workspace.text_documents.get(uri)
    path = to_fs_path(uri)
    if path is None:
        return
    if text_document is not None:
        text, version, lines = text_document.source, text_document.version, text_document.lines
    else:  # a daemon result for a file the editor has not opened
        try:
            # regular files under the size cap only: a FIFO or /dev/zero must not stall the server
            text, version = read_regular_text(path, errors="replace"), None
        except OSError:
            return
        lines = lsp_lines(text)
    # a closed file whose daemon result went: a throwaway document publishes its empty diagnostics
    document = ls.documents.get(uri) or Document(uri)
    positions = mapper(ls, lines)
    cache = document.converted
    pairs: list[Published] = []
    # each kind converted even when it has no records: the cache then lets go of the last ones
    records = document.static.analysis.records if document.static is not None else []
    pairs.extend(zip(records, cache.convert(records, positions, uri), repeat(True)))
    dynamic = ls.documents.daemon_state(uri)
    records = dynamic.records if dynamic is not None else []
    pairs.extend(zip(records, cache.convert(records, positions, uri, dynamic=True), repeat(False)))
    tuned = tuned_records(text, path, ls.tune.for_path(ls.roots, path))
    converted = cache.convert(tuned, positions, uri, dynamic=True, source=TUNE_SOURCE)
    pairs.extend(zip(tuned, converted, repeat(False)))
    retired = cache.retired()
    previous = document.published
    if garbage is not None:
        garbage += [previous, retired]
    document.published = pairs
    diagnostics = [d for _, d, _ in pairs]
    if not resend and previous is not None and [d for _, d, _ in previous] == diagnostics:
        return
    ls.published += 1
    pull.deliver(ls, uri, diagnostics, version)  # pushed, or kept for a client that pulls


def clear(ls: WarpHarnessServer, uri: str) -> None:
    """No diagnostics for ``uri`` any more (closed, or a cell gone)."""
    pull.forget(ls, uri)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


__all__ = ["clear", "mapper", "publish"]
