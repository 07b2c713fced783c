"""Whether a captured kernel is replayed and timed from a hermetic build (issue #31, as #37 item 1).

The worker that launches and times a captured kernel must not run its module's top-level code, nor
the workspace modules it imports. So the kernel is built the way the contract path builds one
(``hermetic_build``): from the module's text, only the kernel's ``def``, the ``@wp.func``s and
``@wp.struct``s it reaches and the constants they read, in a fresh namespace, and likewise what it
imports from other workspace modules (read as text, each built in its own namespace). A kernel that
cannot be built so (it reads a name a module binds at run time: a call's or a factory's result, an
import of a package inside the workspace; a module sets Warp options at its top level) is built from
the module's definitions instead (``worker_side.definitions_only``: its imports run), and every record of its
replay and timing says so, with a WHD069 record beside them (an error under
``--require-hermetic``).

The decision is made here, in the process that runs no workspace code, from the text it sends the
worker (``why_not``); the worker builds the way the job says, from that same text.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from warp_harness.capture.identity import KernelSource, definition_of
from warp_harness.daemon import findings as F
from warp_harness.daemon import hermetic_build
from warp_harness.record import Record, Severity, Stage

# appended to the message of every record of a replay or timing that imported the module
_MARK = " [not hermetic (WHD069): the worker imported the module]"


def why_not(source: str, filename: str, kernel: str, workspace: Path | str | None = None) -> str | None:
    """Why ``kernel`` of the module text ``source`` cannot be built from its text alone, the
    workspace modules it imports from followed from theirs (None: it can). Text only: no Warp,
    nothing executed."""
    return decision(source, filename, kernel, workspace)[0]


def decision(
    source: str,
    filename: str,
    kernel: str,
    workspace: Path | str | None = None,
    closure: dict[str, Any] | None = None,
) -> tuple[str | None, dict[str, str]]:
    """(``why_not``; the texts of the workspace modules it read, by real path, and the origins of
    the packages installed outside the workspace it may import (``hermetic_imports.INSTALLED``):
    sent with the job, the worker builds from exactly them, ``hermetic_build.build(..., texts=...)``).
    ``closure``: the capture's record of a kernel made inside a function (``closure_of``): the
    kernel is decided as if at the module's top level, its free names bound from the record
    (``hermetic_factory``)."""
    return hermetic_build.kernel_texts(source, filename, kernel, workspace, closure)


def closure_of(launch: dict[str, Any]) -> dict[str, Any] | None:
    """The closure record a launch was captured with (None: a module-level kernel's launch)."""
    closure = launch.get("closure")
    return closure if isinstance(closure, dict) else None


def closures(launches: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """The distinct closure records of ``launches``, in order (one build of a kernel per record)."""
    out: dict[str, dict[str, Any] | None] = {}
    for launch in launches:
        closure = closure_of(launch)
        out.setdefault(json.dumps(closure, sort_keys=True), closure)
    return list(out.values()) or [None]


def closure_note(closure: dict[str, Any] | None) -> str:
    """`` (made by `make` closing over n=3, f=twice)`` for a record's summary (`` (def 1 of 2 of its
    name)`` for a module-level kernel defined more than once); "" for none."""
    if not closure:
        return ""
    definition = definition_of(closure)
    which = f", its def {definition[0] + 1} of {definition[1]}" if definition else ""
    if "<locals>" not in str(closure.get("qualname", "")):
        return f" (def {definition[0] + 1} of {definition[1]} of its name)" if definition else ""
    cells = closure.get("cells") if isinstance(closure.get("cells"), dict) else {}
    assert isinstance(cells, dict)
    said = ", ".join(
        f"{name}={c.get('value', c.get('qualname', c.get('name', c.get('type'))))}"
        for name, c in sorted(cells.items())
        if isinstance(c, dict)
    )
    factory = str(closure.get("qualname", "")).rsplit(".<locals>.", 1)[0]
    return f" (made by `{factory}`{which}{' closing over ' + said if said else ''})"


def marked(records: list[Record]) -> list[Record]:
    """``records`` with the mark of a replay (or timing) that imported the module."""
    return [r if r.message.endswith(_MARK) else replace(r, message=r.message + _MARK) for r in records]


def record(display: str, src: KernelSource, why: str, required: bool) -> Record:
    """WHD069 for the captured kernel ``src`` replayed or timed from an import of its module."""
    kernel = src.name
    return F.make_record(
        Stage.NUMERIC,
        F.NOT_HERMETIC,
        Severity.ERROR if required else Severity.WARNING,
        display,
        src.line,
        f"the replay of `{kernel}`'s captured launches is not hermetic: the worker that launched and "
        f"timed it imported the module, whose top-level code (and the workspace modules it imports) "
        f"ran there, because {why}",
        col=src.col,
        end_col=src.end_col,
        kernel=kernel,
        hint="define the kernel at module level with `@wp.kernel`, reading only `@wp.func`s, "
        "`@wp.struct`s and constants (of its module, or imported from workspace modules)",
    )
