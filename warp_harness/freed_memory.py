"""Handing the memory malloc keeps after a large parse back to the system (glibc's ``malloc_trim``)."""

from __future__ import annotations

import sys
from typing import Any

# the size of a text from whose parse the memory malloc keeps is handed back (`release_freed_memory`)
TRIM_MIN_CHARS = 262_144


def release_freed_memory() -> None:
    """Hand the pages malloc holds free back to the system (glibc's ``malloc_trim``; elsewhere nothing).
    `ast.parse` builds a C syntax tree as large as the Python one and frees it on return; malloc keeps
    those pages, and the Python objects allocated next (the trees and models of the modules the file's
    launches run) do not reuse them. Parsed in pieces (`parse_in_pieces`), one statement can still be
    large: newton's 1 MB steel solver holds a 560 kB class (its check's peak: 99 -> 91 MB)."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = _find_malloc_trim()
    if _malloc_trim is not False:
        _malloc_trim(0)


def _find_malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return False


_malloc_trim: Any = None
