"""The static tier as the server runs it: settings per file, one analyser, errors reported once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from warp_harness.config import ConfigError, Settings, load_settings
from warp_harness.engine import Analysis
from warp_harness.incremental import IncrementalAnalyser


class Analyser(Protocol):
    def analyse(self, text: str, path: str, settings: Settings) -> Analysis: ...

    def forget(self, path: str) -> None: ...


class StaticTier:
    """Runs the analyser with the settings that apply to a file: its pyproject, then the client's."""

    def __init__(self, report: Callable[[str], None], analyser: Analyser | None = None) -> None:
        self.analyser = analyser or IncrementalAnalyser()
        self.overrides: dict[str, Any] = {}
        self._report = report
        self._reported: set[str] = set()
        self.analyses = 0

    def warm_up(self) -> None:
        """Load what the first analysis needs (the rules, Warp's builtin table) ahead of it."""
        from warp_harness.builtins import load_table
        from warp_harness.rules import all_rules

        all_rules()
        load_table()

    def settings_for(self, path: str) -> Settings:
        start = Path(path).parent
        try:
            return load_settings(start, self.overrides)
        except ConfigError as exc:
            self._report_once(f"warp-harness: configuration error, using defaults: {exc}")
        try:
            return Settings().merged(self.overrides)
        except ConfigError:
            return Settings()

    def set_overrides(self, overrides: Mapping[str, Any]) -> None:
        self.overrides = dict(overrides)
        self._reported.clear()

    def analyse(self, text: str, path: str) -> Analysis:
        settings = self.settings_for(path)
        self.analyses += 1
        try:
            return self.analyser.analyse(text, path, settings)
        except Exception as exc:  # the profile named by a pyproject is unknown, or worse
            self._report_once(f"warp-harness: analysis of {Path(path).name} failed: {exc}")
            self.analyser.forget(path)
            try:
                return self.analyser.analyse(text, path, Settings())
            except Exception:
                return Analysis([], None, None)

    def forget(self, path: str) -> None:
        self.analyser.forget(path)

    def _report_once(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            self._report(message)
