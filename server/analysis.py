"""The static tier as the server runs it: settings per file, one analyser, errors reported once, and the
workspace model (`warp_harness.model.project`): the modules of the workspace folders, kept up to date from
open documents and file events, so launches of kernels defined in other modules are judged; which open
documents launch a module's kernels (`StaticTier.dependents`) is known from each one's last analysis."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from warp_harness.config import ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from warp_harness.engine import Analysis
    from warp_harness.incremental import Early
    from warp_harness.model.project import ProjectIndex, ProjectView

# The analysis stack (engine, incremental, the model, the rules: ~60 ms of imports) is imported on the
# analysis thread (server/worker.py), by `warm_up` while the client's initialize handshake runs.


class Analyser(Protocol):
    def analyse(self, text: str, path: str, settings: Settings) -> Analysis: ...

    def forget(self, path: str) -> None: ...


class StaticTier:
    """Runs the analyser with the settings that apply to a file: its pyproject, then the client's."""

    def __init__(self, report: Callable[[str], None], analyser: Analyser | None = None) -> None:
        self._analyser = analyser
        self.overrides: dict[str, Any] = {}
        self._report = report
        self._reported: set[str] = set()
        self.analyses = 0
        # the workspace model (None until `open_workspace`), and per analysed path the modules its launches
        # resolved against (names -> digests)
        self.project: ProjectIndex | None = None
        self.deps: dict[str, dict[str, str]] = {}
        # per analysed path, the settings of its last analysis (the debounce of the next edit reads them)
        self.last_settings: dict[str, Settings] = {}

    @property
    def analyser(self) -> Analyser:
        """The analyser (by default `IncrementalAnalyser`, made on first use)."""
        if self._analyser is None:
            from warp_harness.incremental import IncrementalAnalyser

            self._analyser = IncrementalAnalyser()
        return self._analyser

    # --- the workspace model ----------------------------------------------------------------------
    def open_workspace(self, roots: list[Path]) -> None:
        """Index the Python modules of the workspace folders (summaries are built on first use)."""
        from warp_harness.builtins import load_table
        from warp_harness.model.project import ProjectIndex

        self.project = ProjectIndex.for_paths(roots, builtins=load_table())
        self.deps.clear()

    def _indexed(self, path: str) -> str | None:
        """The module name of ``path`` in the workspace model, indexing its package when it is new."""
        project = self.project
        if project is None:
            return None
        module = project.module_of(path)
        if module is None:
            from warp_harness.model.project import package_root

            root = package_root(Path(path))
            if (root / "__init__.py").is_file():
                project.add_tree(root)
            module = project.module_of(path) or project.add_file(Path(path))
        return module

    def document_changed(self, path: str, text: str | None) -> str | None:
        """An open document's text (None: closed, the file on disk counts again); its module name."""
        if self.project is None or self._indexed(path) is None:
            return None
        return self.project.set_text(Path(path), text)

    def file_changed(self, path: str, deleted: bool = False) -> str | None:
        """A file event (created, changed or deleted on disk); the module name concerned."""
        project = self.project
        if project is None or not path.endswith(".py"):
            return None
        if deleted:
            module = project.module_of(path)
            project.remove_file(Path(path))
            return module
        known = project.module_of(path)
        if known is None:
            return self._indexed(path)
        return project.changed(Path(path))

    def dependents(self, module: str) -> list[str]:
        """The analysed paths whose launches resolved against ``module`` (or looked for it)."""
        return [path for path, deps in self.deps.items() if module in deps]

    def _view(self, path: str, text: str) -> ProjectView | None:
        if self.project is None or self._indexed(path) is None:
            return None
        self.project.set_text(Path(path), text)
        return self.project.view(path)

    def warm_up(self) -> None:
        """Load what the first analysis needs (the rules, Warp's builtin table) ahead of it."""
        from warp_harness.builtins import load_table
        from warp_harness.rules import all_rules

        self.analyser  # noqa: B018 (made here: it imports the model)
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
        self.last_settings.clear()

    def debounce_s(self, path: str) -> float:
        """The debounce delay for an edit of ``path``: from the settings of its last analysis (which reads
        them afresh) when there was one; reading a pyproject at every keystroke costs ~0.2 ms."""
        settings = self.last_settings.get(path) or self.settings_for(path)
        return settings.debounce_ms / 1000

    def analyse(self, text: str, path: str, early: Early | None = None) -> Analysis:
        """The records of ``text`` (as ``path``); ``early``: `IncrementalAnalyser.analyse`'s (the first
        screen's records handed on ahead of the whole)."""
        from warp_harness.engine import Analysis
        from warp_harness.incremental import IncrementalAnalyser

        settings = self.settings_for(path)
        self.last_settings[path] = settings
        self.analyses += 1
        view = self._view(path, text) if isinstance(self.analyser, IncrementalAnalyser) else None
        try:
            if view is not None:
                assert isinstance(self.analyser, IncrementalAnalyser)
                analysis = self.analyser.analyse(text, path, settings, view, early)
                self.deps[path] = dict(view.deps)
                return analysis
            if early is not None and isinstance(self.analyser, IncrementalAnalyser):
                return self.analyser.analyse(text, path, settings, None, early)
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
        self.deps.pop(path, None)
        self.last_settings.pop(path, None)

    def _report_once(self, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            self._report(message)
