"""Renderers of findings: terminal text, JSON for agents, SARIF for code scanning, GitHub
Actions annotations and JUnit XML for CI.

    from warp_harness.output import FileResult, render
    print(render("sarif", [FileResult("k.py", records)], rules=rules, tool_version="0.1.0"))

Every renderer gets the same arguments and returns the whole document as a string
(ending in a newline, except empty GitHub output). Renderers keep the order of files and
records they are given; sorting (``Record.sort_key``) is the caller's choice.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Protocol, cast

from .model import FileResult, RuleInfo

__all__ = ["FORMATS", "FileResult", "Renderer", "RuleInfo", "render"]

FORMATS = (
    "text",
    "concise",
    "grouped",
    "json",
    "json-lines",
    "sarif",
    "github",
    "gitlab",
    "junit",
    "pylint",
    "rdjson",
)


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


def _renderer(format: str) -> Renderer:
    """``output.<format>.render_<format>``, imported on first use (the language server, which
    imports the engine and so this package, never renders)."""
    name = format.replace("-", "_")
    module = importlib.import_module(f"{__name__}.{name}")
    return cast(Renderer, getattr(module, f"render_{name}"))


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
    if format not in FORMATS:
        raise ValueError(f"unknown output format {format!r}; choose one of {', '.join(FORMATS)}")
    return _renderer(format)(results, rules=rules, tool_version=tool_version, color=color)
