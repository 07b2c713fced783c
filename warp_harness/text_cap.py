"""The size cap on a text the static tier analyses, wherever the text comes from.

`check` reads a file's bytes and ``model.source.decode_source`` refuses more than
``MAX_SOURCE_BYTES`` (one WH000 record, no analysis). A text an editor sends the language server
(a document, a notebook's code cells) never passes through there: an 11 MiB document took the
server 77 s and 5.7 GB. These helpers apply the same cap to a text already in memory, and to a
notebook's code cells together, without encoding a text that is certainly under it.
"""

from __future__ import annotations

from collections.abc import Iterable

from warp_harness.model.source import MAX_SOURCE_BYTES
from warp_harness.record import Location, Record, Severity, Stage

_MIB = 1024 * 1024
# what `check` says of a file over the cap (``decode_source``), for the same record in the editor
_OVER = f"MiB; files over {MAX_SOURCE_BYTES // _MIB} MiB are not analysed"
HINT = "nothing in it is checked; split it into smaller modules"


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def over_cap(texts: Iterable[str], limit: int = MAX_SOURCE_BYTES) -> int | None:
    """The UTF-8 size of ``texts`` together when it is over ``limit``, else None. A character is 1 to
    4 bytes, so only texts between ``limit / 4`` and ``limit`` characters are encoded to tell."""
    texts = list(texts)
    chars = sum(len(t) for t in texts)
    if chars * 4 <= limit:
        return None
    size = chars if chars > limit else sum(utf8_size(t) for t in texts)
    return size if size > limit else None


def too_large_record(path: str, size: int, what: str = "file is", cell: int | None = None) -> Record:
    """The one record of a text over the cap (WH000, as `check` reports a file over it)."""
    return Record(
        stage=Stage.SYNTAX,
        rule="WH000",
        severity=Severity.ERROR,
        location=Location(path, 1, 0, 1, 0, cell=cell),
        message=f"syntax error: {what} {size // _MIB} {_OVER}",
        hint=HINT,
        priority=100,
    )


def document_too_large(text: str, path: str) -> Record | None:
    """The record of a document over the cap, None when it is not."""
    size = over_cap([text])
    return None if size is None else too_large_record(path, size)


def cells_too_large(cells: Iterable[tuple[int, str]], path: str) -> Record | None:
    """The record of a notebook whose code cells (``(number, source)``) are over the cap together,
    placed on the largest one; None when they are not."""
    cells = list(cells)
    size = over_cap(source for _, source in cells)
    if size is None:
        return None
    largest = max(cells, key=lambda cell: len(cell[1]))[0]
    return too_large_record(path, size, "the notebook's code cells are", cell=largest)


__all__ = ["HINT", "cells_too_large", "document_too_large", "over_cap", "too_large_record", "utf8_size"]
