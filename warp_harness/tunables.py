"""Module-level tunable constants (``TILE_K = wp.constant(32)``, ``BLOCK_DIM = 64``) as text:
where each is assigned and the edits that set new values. Pure text work, shared by
`warp-harness tune` (which rewrites candidates) and the language server (which offers the
best configuration found as a code action)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from warp_harness.record import TextEdit


def _assignment(source: str, name: str) -> re.Match[str] | None:
    pattern = re.compile(
        rf"^(?P<lhs>{re.escape(name)}\s*(?::[^=\n]+)?=\s*)(?P<rhs>[^#\n]*?)(?P<tail>\s*(?:#.*)?)$",
        re.MULTILINE,
    )
    return pattern.search(source)


def _value_text(rhs: str, value: Any) -> str:
    call = re.match(r"^(?P<f>[\w.]*constant\()(?P<arg>.*)\)$", rhs.strip())
    return f"{call.group('f')}{value!r})" if call else repr(value)


def current_values(source: str, names: list[str]) -> dict[str, Any]:
    """The literal value each name is assigned at module level (names without one are left out)."""
    out: dict[str, Any] = {}
    for name in names:
        m = _assignment(source, name)
        if m is None:
            continue
        rhs = m.group("rhs").strip()
        call = re.match(r"^[\w.]*constant\((?P<arg>.*)\)$", rhs)
        literal = call.group("arg") if call else rhs
        try:
            out[name] = _literal(literal)
        except ValueError:
            continue
    return out


def _literal(text: str) -> Any:
    return ast.literal_eval(text.strip())


def constant_edits(source: str, config: Mapping[str, Any]) -> list[TextEdit]:
    """Edits (1-based lines, character columns) that set each constant of ``config``.

    KeyError when a name is not assigned at module level.
    """
    edits = []
    for name, value in config.items():
        m = _assignment(source, name)
        if m is None:
            raise KeyError(f"tunable `{name}` is not assigned at module level")
        start, end = m.start("rhs"), m.end("rhs")
        line = source.count("\n", 0, start) + 1
        line_start = source.rfind("\n", 0, start) + 1
        edits.append(
            TextEdit(line, start - line_start, line, end - line_start, _value_text(m.group("rhs"), value))
        )
    return edits
