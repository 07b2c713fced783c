"""Renderers of findings: terminal text, JSON for agents, SARIF for code scanning, GitHub
Actions annotations and JUnit XML for CI.

    from warp_harness.output import FileResult, render
    print(render("sarif", [FileResult("k.py", records)], rules=rules, tool_version="0.1.0"))

Every renderer gets the same arguments and returns the whole document as a string
(ending in a newline, except empty GitHub output). Renderers keep the order of files and
records they are given; sorting (``Record.sort_key``) is the caller's choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .github import render_github
from .json import render_json
from .junit import render_junit
from .model import FileResult, RuleInfo
from .sarif import render_sarif
from .text import render_text

__all__ = ["FORMATS", "FileResult", "Renderer", "RuleInfo", "render"]

FORMATS = ("text", "json", "sarif", "github", "junit")


class Renderer(Protocol):
    """The signature every format module's ``render_<format>`` function has."""

    def __call__(
        self,
        results: Sequence[FileResult],
        *,
        rules: Mapping[str, RuleInfo],
        tool_version: str,
        color: bool = False,
    ) -> str: ...


_RENDERERS: dict[str, Renderer] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "github": render_github,
    "junit": render_junit,
}


def render(
    format: str,
    results: Sequence[FileResult],
    *,
    rules: Mapping[str, RuleInfo],
    tool_version: str,
    color: bool = False,
) -> str:
    """Render ``results`` in ``format`` (one of :data:`FORMATS`).

    ``color`` only affects ``text``. Raises ValueError for an unknown format.
    """
    try:
        renderer = _RENDERERS[format]
    except KeyError:
        raise ValueError(f"unknown output format {format!r}; choose one of {', '.join(FORMATS)}") from None
    return renderer(results, rules=rules, tool_version=tool_version, color=color)
