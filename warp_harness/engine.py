"""The static tier: source text -> model -> every enabled rule -> ordered, filtered records."""

from __future__ import annotations

import gc
import os
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from warp_harness.config import Settings, load_settings, repository_root
from warp_harness.freed_memory import TRIM_MIN_CHARS, release_freed_memory
from warp_harness.record import Location, Record, Severity, Stage
from warp_harness.safe_read import MAX_FILE_BYTES, FileTooLargeError, UnreadableFileError, read_regular
from warp_harness.suppressions import Suppressions, may_hold_comments
from warp_harness.workspace import iter_python_files

if TYPE_CHECKING:
    import ast

    from warp_harness.builtins import BuiltinTable
    from warp_harness.model.module import ModuleModel
    from warp_harness.model.project import ProjectIndex, ProjectView
    from warp_harness.model.source import ParsedSource, SyntaxIssue
    from warp_harness.notebooks import Joined, Notebook
    from warp_harness.output.model import FileResult
    from warp_harness.rules.base import Rule, RuleContext, Scope, _Reading

# The model stack (model.module: ~20 ms of imports) is imported where a file is analysed: a `check`
# answered from its result cache, or a file that cannot be decoded, never builds a model.

SYNTAX_RULE = "WH000"
INTERNAL_RULE = "WH999"
# a file not checked at all: not a regular file, over the size limit, or a symlink out of the workspace
UNREADABLE_RULE = "WH998"


@dataclass
class Analysis:
    """One file's static analysis: its records, and its model and parse when it parsed."""

    records: list[Record]
    model: ModuleModel | None
    source: ParsedSource | None


def _builtins() -> BuiltinTable:
    from warp_harness.builtins import load_table

    return load_table()


def syntax_record(path: str, issue: SyntaxIssue) -> Record:
    return Record(
        stage=Stage.SYNTAX,
        rule=SYNTAX_RULE,
        severity=Severity.ERROR,
        location=Location(
            path,
            issue.line,
            issue.col,
            issue.end_line or issue.line,
            issue.end_col if issue.end_col is not None else issue.col + 1,
        ),
        message=f"syntax error: {issue.message}",
        hint="the rest of the file is still checked; kernels in the statement with the error are skipped",
        priority=100,
    )


def _resolve_conflicts(records: list[Record]) -> list[Record]:
    """Two rules on exactly the same span: keep the higher-priority one."""
    best: dict[tuple[int, int, int | None, int | None], Record] = {}
    unplaced: list[Record] = []
    for record in records:
        loc = record.location
        if record.stage is not Stage.CONSTRAINT:
            unplaced.append(record)
            continue
        key = (loc.line, loc.col, loc.end_line, loc.end_col)
        current = best.get(key)
        if current is None or record.priority > current.priority:
            best[key] = record
        elif record.priority == current.priority and record.rule != current.rule:
            unplaced.append(record)
    return [*best.values(), *unplaced]


def scoped_records(rule: Rule, ctx: RuleContext) -> Iterator[tuple[Scope, int, Record]]:
    """Every record of ``rule`` on ``ctx.model``, with the scope the rule declares and the position of
    the item it is about in ``ctx.model.kernels`` (scopes KERNEL, KERNEL_OR_FUNC) or ``.launches``
    (LAUNCH); 0 for MODULE. The one loop over a file's kernels and launches: rules judge one item.
    With `rules.base.CHECK_FACTS`, the rule runs under the check of what it declares it reads."""
    from warp_harness.rules.base import CHECK_FACTS, Scope, check_reading

    scope = rule.scope
    if scope is Scope.FINDINGS:
        return  # judged from the other rules' records: `judged_findings`
    if CHECK_FACTS:
        yield from _checked_records(rule, ctx, check_reading(rule, ctx))
        return
    if not rule.applies(ctx):
        return
    if scope is Scope.MODULE:
        for record in rule.check_module(ctx):
            yield scope, 0, record
    elif scope is Scope.LAUNCH:
        for position, site in enumerate(ctx.model.launches):
            for record in rule.check_launch(ctx, site):
                yield scope, position, record
    else:
        kernels_only = scope is Scope.KERNEL
        for position, kernel in enumerate(ctx.model.kernels):
            if kernels_only and not kernel.is_kernel:
                continue
            for record in rule.check_kernel(ctx, kernel):
                yield scope, position, record
        if rule.foreign_launches and ctx.project is not None:
            # the launch side of kernels this file reaches indirectly: records at (and filed under) the site
            from warp_harness.rules.queries import indirect_launches

            for position, sites, kernel in indirect_launches(ctx):
                with ctx.project.focused(sites):
                    records = list(rule.check_kernel(ctx, kernel))
                for record in records:
                    yield Scope.LAUNCH, position, record


def _checked_records(rule: Rule, ctx: RuleContext, reading: _Reading) -> Iterator[tuple[Scope, int, Record]]:
    """`scoped_records`, each call of the rule run under ``reading`` (the engine's own reads are not)."""
    from warp_harness.rules.base import Scope

    if not reading.applies(rule, ctx):
        return
    scope = rule.scope
    if scope is Scope.MODULE:
        for record in reading.run(rule.check_module, ctx):
            yield scope, 0, record
    elif scope is Scope.LAUNCH:
        for position, site in enumerate(ctx.model.launches):
            for record in reading.run(rule.check_launch, ctx, site):
                yield scope, position, record
    else:
        kernels_only = scope is Scope.KERNEL
        for position, kernel in enumerate(ctx.model.kernels):
            if kernels_only and not kernel.is_kernel:
                continue
            for record in reading.run(rule.check_kernel, ctx, kernel):
                yield scope, position, record
        if rule.foreign_launches and ctx.project is not None:
            from warp_harness.rules.queries import indirect_launches

            for position, sites, kernel in indirect_launches(ctx):
                with ctx.project.focused(sites):
                    records = list(reading.run(rule.check_kernel, ctx, kernel))
                for record in records:
                    yield Scope.LAUNCH, position, record


def analyse_source(
    text: str,
    path: str = "<memory>",
    settings: Settings | None = None,
    overrides: Mapping[str, Any] | None = None,
    builtins: BuiltinTable | None = None,
    project: ProjectView | None = None,
) -> Analysis:
    """Run the static tier on one file's text. Never raises on bad input. ``project``: the workspace
    model seen from this file (`ProjectIndex.view`), for kernels launched from other modules."""
    settings = settings or Settings()
    if overrides:
        settings = settings.merged(overrides)
    # The analysis allocates many short-lived, acyclic objects (AST nodes, types); each cyclic-GC
    # pass would also traverse the whole heap, builtin table included: measured ~20% of the time.
    # Reference counting frees them all the same; the collector runs again afterwards.
    from warp_harness.model.source import parse_source

    enabled = gc.isenabled()
    gc.disable()
    try:
        return analyse_parsed(parse_source(text), path, settings, builtins or _builtins(), project=project)
    finally:
        if enabled:
            gc.enable()


def analyse_parsed(
    parsed: ParsedSource,
    path: str,
    settings: Settings,
    table: BuiltinTable,
    model: ModuleModel | None = None,
    project: ProjectView | None = None,
) -> Analysis:
    """`analyse_source` from the parse on (``model``: already built from ``parsed``)."""
    from warp_harness.model.module import build_model

    records: list[Record] = []
    if parsed.syntax_error is not None:
        records.append(syntax_record(path, parsed.syntax_error))
    model = model or build_model(parsed.text, path, table, parsed)
    if model.kernels or model.launches:
        # imported here: a file with neither never imports the rules
        from warp_harness.hardware import load_profile
        from warp_harness.rules import all_rules
        from warp_harness.rules.base import RuleContext, UndeclaredFact

        view = project.attach(model) if project is not None and model.launches else None
        ctx = RuleContext(model, load_profile(settings.target), table, settings, project=view)
        found: list[Record] = []
        failed: set[str] = set()
        for rule in all_rules():
            if not settings.rule_enabled(rule.id):
                continue
            try:
                found.extend(record for _, _, record in scoped_records(rule, ctx))
            except UndeclaredFact:
                raise  # the rule contract is broken (`rules.base.CHECK_FACTS`): the test fails, loudly
            except Exception as exc:  # a broken rule must not take the others down
                records.append(internal_record(path, rule.id, exc))
                failed.add(rule.id)
        records.extend(found)
        records.extend(judged_findings(ctx, found, frozenset(failed)))
    return Analysis(finish_records(records, parsed, settings), model, parsed)


def first_screen_records(
    parsed: ParsedSource,
    path: str,
    settings: Settings,
    table: BuiltinTable,
    model: ModuleModel,
    last_line: int,
    view: ProjectView | None = None,
    context: Callable[..., RuleContext] | None = None,
) -> list[Record] | None:
    """The records `analyse_parsed` gives inside the kernels and Warp functions that start on lines 1 to
    ``last_line`` (what an editor shows of a file it opens), from their rules alone: a subset of the full
    analysis, published ahead of it for a large file. None where that cannot be told without the rest: a
    syntax error, or a rule that failed.

    A kernel's records depend on the model and the kernel, never on the rules' other items (the incremental
    analyser reuses them per kernel on the same ground); the only rules of other scopes are about launches
    (records at the sites, in host code, never inside a kernel), unused suppressions (judged from all
    records: left to the full analysis) and syntax. So what is kept, records placed inside those kernels,
    is what the full analysis keeps there: the same conflicts between them, suppressions and severities.
    ``view``: the workspace model attached to ``model`` (as the full analysis attaches it), or None.
    ``context``: what makes the rules' context (`RuleContext` by default; `first_screen` passes one that
    raises where a rule reads what the model of a part of the file cannot tell)."""
    from warp_harness.rules import all_rules
    from warp_harness.rules.base import Scope

    if parsed.syntax_error is not None:
        return None
    shown = [
        (position, kernel)
        for position, kernel in enumerate(model.kernels)
        if _first_line(kernel.node) <= last_line
    ]
    if not shown:
        return []
    from warp_harness.hardware import load_profile
    from warp_harness.rules.base import RuleContext

    ctx = (context or RuleContext)(model, load_profile(settings.target), table, settings, project=view)
    spans = [_span(kernel.node) for _, kernel in shown]
    # a kernel nested in a shown one but starting below: its records are not made here (a nested factory)
    others = [_span(kernel.node) for kernel in model.kernels if _first_line(kernel.node) > last_line]
    found: list[Record] = []
    for rule in all_rules():
        if rule.scope not in (Scope.KERNEL, Scope.KERNEL_OR_FUNC) or not settings.rule_enabled(rule.id):
            continue
        try:
            if not rule.applies(ctx):
                continue
            for _, kernel in shown:
                if rule.scope is Scope.KERNEL and not kernel.is_kernel:
                    continue
                found.extend(rule.check_kernel(ctx, kernel))
        except Exception:
            return None  # the full analysis reports it (WH999)
    inside = [
        r
        for r in found
        if r.location.path == path
        and any(first <= r.location.line <= last for first, last in spans)
        and not any(first <= r.location.line <= last for first, last in others)
    ]
    return finish_records(inside, parsed, settings)


def _span(node: ast.FunctionDef) -> tuple[int, int]:
    return _first_line(node), node.end_lineno or node.lineno


def _first_line(node: ast.FunctionDef) -> int:
    """The first line of a function with its decorators."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def judged_findings(ctx: RuleContext, found: list[Record], failed: frozenset[str]) -> list[Record]:
    """The records of the enabled rules of scope FINDINGS (`Rule.check_findings`), judged from ``found``:
    what the other enabled rules reported on ``ctx.model`` (before conflicts and suppressions);
    ``failed``: the rules that raised."""
    from warp_harness.rules import all_rules
    from warp_harness.rules.base import CHECK_FACTS, Findings, Scope, check_reading

    rules = all_rules()
    judges = [r for r in rules if r.scope is Scope.FINDINGS and ctx.settings.rule_enabled(r.id)]
    if not judges:
        return []

    def run(rule: Rule) -> list[Record]:
        return [record for _, _, record in scoped_records(rule, ctx)]

    findings = Findings(found, failed, rules, run)
    records: list[Record] = []
    for judge in judges:
        if CHECK_FACTS:
            records.extend(check_reading(judge, ctx).run(judge.check_findings, ctx, findings))
        else:
            records.extend(judge.check_findings(ctx, findings))
    return records


def internal_record(path: str, rule_id: str, exc: Exception) -> Record:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return Record(
        stage=Stage.INTERNAL,
        rule=INTERNAL_RULE,
        severity=Severity.WARNING,
        location=Location(path, 1, 0, 1, 0),
        message=f"internal error in rule {rule_id} ({type(exc).__name__}: {exc}) at "
        f"{Path(frame.filename).name}:{frame.lineno}; the other rules still ran",
        hint="please report this with the file that triggers it",
    )


def finish_records(records: list[Record], parsed: ParsedSource, settings: Settings) -> list[Record]:
    """Conflicts resolved, suppressions applied, severities overridden, sorted: what the caller sees."""
    resolved = _resolve_conflicts(records)
    if may_hold_comments(parsed.text):
        suppressions = Suppressions.from_lines(parsed.lines)
        kept = [r for r in resolved if not suppressions.is_suppressed(r)]
    else:
        kept = resolved
    kept = [r.with_severity(settings.severity[r.rule]) if r.rule in settings.severity else r for r in kept]
    kept.sort(key=Record.sort_key)
    return kept


# which source lines a result keeps: all (True), none (False), or only those its records point at
KeepLines = bool | Literal["records"]


# the size from which a text without kernels is syntax-checked without building its tree
SYMTABLE_MIN_CHARS = 16_384


def check_bytes(
    data: bytes,
    path: str,
    settings: Settings | None = None,
    builtins: BuiltinTable | None = None,
    project: ProjectView | None = None,
    *,
    keep_lines: KeepLines = True,
    symtable_from: int = SYMTABLE_MIN_CHARS,
) -> FileResult:
    """The records of one file's bytes, with its source lines unless ``keep_lines`` is False (an output
    that shows no source text: newton's 819k lines are not cut again for nothing); "records": only the
    lines the records point at (`kept_lines`). ``symtable_from``: the size from which a text without
    kernels is syntax-checked without its tree (a check of many files: 0, symtable's import paid once)."""
    from warp_harness.model.source import decode_source, parses_cleanly
    from warp_harness.output.model import FileResult

    text, problem = decode_source(data)
    if text is None:
        assert problem is not None
        return FileResult(path, (syntax_record(path, problem),), None)
    if not may_hold_kernels(text):
        # no record at all: the tree `_syntax_only` would build is not needed (a small text is parsed:
        # importing symtable costs more than its parse, the whole of a one-file check of an empty file)
        if len(text) >= symtable_from and parses_cleanly(text):
            lines = kept_lines(text.splitlines(keepends=True), (), keep_lines) if keep_lines else None
            return FileResult(path, (), lines)
        analysis = _syntax_only(text, path, settings or Settings())
    elif project is not None:
        # the bytes go with the frame they are handed to (a Python call moves its arguments): a large file's
        # bytes are not held through its analysis by the frames above (newton's steel solver: 1 MiB at the
        # peak memory of its check)
        handed = [data]
        del data
        analysis = _analyse_in_project(
            handed.pop(), text, path, settings or Settings(), builtins or _builtins(), project
        )
    else:
        analysis = analyse_source(text, path, settings, builtins=builtins)
    records = tuple(analysis.records)
    return FileResult(
        path,
        records,
        kept_lines(analysis.source.lines, records, keep_lines) if analysis.source and keep_lines else None,
    )


def kept_lines(lines: Iterable[str], records: Iterable[Record], keep: KeepLines) -> tuple[str, ...] | None:
    """``lines`` (each with its line break) as a result keeps them: without their line breaks, the lines no
    record points at "" when ``keep`` is "records". Only the kept lines are copied: the file's largest
    check (newton's 1 MB steel solver) cut all 32k at its peak memory to keep a few (+2 MiB)."""
    if keep is False:
        return None
    if keep == "records":
        wanted = {r.location.line for r in records}
        return tuple(line.rstrip("\r\n") if n in wanted else "" for n, line in enumerate(lines, 1))
    return tuple(line.rstrip("\r\n") for line in lines)


def may_hold_kernels(text: str) -> bool:
    """Whether the model of ``text`` may have a kernel, a Warp function or a launch: only then does a rule
    run. Each is reached through an import of Warp and spelled with one of Warp's names (``kernel``,
    ``func``, ``func_native``, ..., ``launch``, ``launch_tiled``); without them only the syntax matters."""
    from warp_harness.model.source import may_spell

    return may_spell(text, "warp") and may_spell(text, "kernel", "func", "launch")


def _syntax_only(text: str, path: str, settings: Settings) -> Analysis:
    """`analyse_source` of a text without kernels and launches: its syntax error if any, without the model
    stack or the builtin table (a cold `check` of such a file imports neither)."""
    from warp_harness.model.source import parse_source

    parsed = parse_source(text)
    records = [syntax_record(path, parsed.syntax_error)] if parsed.syntax_error is not None else []
    return Analysis(finish_records(records, parsed, settings), None, parsed)


def _analyse_in_project(
    data: bytes, text: str, path: str, settings: Settings, table: BuiltinTable, project: ProjectView
) -> Analysis:
    """`analyse_source` sharing the parse and model with the workspace model: a module already built to
    resolve a launch is not built again, and one built here serves later launches into it."""
    from warp_harness.model.module import build_model
    from warp_harness.model.source import parse_in_pieces

    enabled = gc.isenabled()
    gc.disable()  # as in `analyse_source`
    try:
        index = project.index
        reused = index.checked(path, data)
        parsed = reused[0] if reused is not None else parse_in_pieces(text)
        model = reused[1] if reused is not None else None
        if reused is None and len(text) >= TRIM_MIN_CHARS:
            release_freed_memory()
        if model is None:
            model = build_model(parsed.text, path, table, parsed)
            index.keep(path, data, parsed, model)
        del data  # not needed past `keep`
        return analyse_parsed(parsed, path, settings, table, model, project)
    finally:
        if enabled:
            gc.enable()


def check_file(
    path: Path,
    overrides: Mapping[str, Any] | None = None,
    display_path: str | None = None,
    builtins: BuiltinTable | None = None,
    analyse: Callable[[bytes, str, Settings, BuiltinTable | None], FileResult] | None = None,
    settings: Settings | None = None,
) -> FileResult:
    """The records of one file; ``analyse`` (default :func:`check_bytes`) turns the bytes read into
    them once the file passed the link and regular-file checks (the result cache wraps it).
    ``settings``: what ``load_settings(path, overrides)`` gives, when the caller knows it already."""
    from warp_harness.output.model import FileResult

    if settings is None:
        settings = load_settings(path, overrides)
    shown = display_path or _display(path)
    outside = _link_outside(path, settings)
    if outside is not None:
        return FileResult(shown, (unreadable_record(shown, outside),), None)
    try:
        data = read_regular(path, MAX_FILE_BYTES)
    except UnreadableFileError as exc:
        return FileResult(shown, (unreadable_record(shown, _not_checked(exc)),), None)
    except OSError as exc:
        return FileResult(
            shown,
            (
                Record(
                    stage=Stage.SYNTAX,
                    rule=SYNTAX_RULE,
                    severity=Severity.ERROR,
                    location=Location(shown, 1, 0),
                    message=f"cannot read file: {exc.strerror or exc}",
                ),
            ),
            None,
        )
    if path.suffix == ".ipynb":  # a notebook: its code cells as one module (warp_harness/notebooks.py)
        return check_notebook_bytes(data, shown, settings, builtins)
    # handed on, not kept here: the analysis drops the bytes once read (`check_bytes`)
    handed = [data]
    del data
    return (analyse or check_bytes)(handed.pop(), shown, settings, builtins)


@dataclass(frozen=True)
class NotebookAnalysis:
    """A notebook's analysis: the cells joined into one module, and its records mapped back to them."""

    notebook: Notebook
    joined: Joined
    records: list[Record]


def analyse_notebook(
    text: str, path: str, settings: Settings | None = None, builtins: BuiltinTable | None = None
) -> NotebookAnalysis:
    """The records of a notebook's code cells (warp_harness/notebooks.py joins them into one
    module), placed in their cells. Raises NotebookError."""
    from warp_harness.notebooks import join_cells, place_records, read_notebook
    from warp_harness.text_cap import cells_too_large

    notebook = read_notebook(text)
    if not notebook.python:
        return NotebookAnalysis(notebook, join_cells([]), [])
    too_large = cells_too_large(((c.number, c.source) for c in notebook.cells if c.kind == "code"), path)
    if too_large is not None:  # the size cap of a file, on the code the notebook holds
        return NotebookAnalysis(notebook, join_cells([]), [too_large])
    joined = join_cells(notebook.cells)
    analysis = analyse_source(joined.text, path, settings, builtins=builtins)
    sources = {c.number: c.source for c in notebook.cells}
    return NotebookAnalysis(notebook, joined, place_records(analysis.records, path, joined, sources))


def check_notebook_bytes(
    data: bytes, path: str, settings: Settings | None = None, builtins: BuiltinTable | None = None
) -> FileResult:
    """`check_bytes` for a notebook: records by cell, the cells' lines for excerpts."""
    from warp_harness.notebooks import NotebookError
    from warp_harness.output.model import FileResult

    try:
        text = data.decode("utf-8-sig")
        result = analyse_notebook(text, path, settings, builtins)
    except (UnicodeDecodeError, NotebookError) as exc:
        record = Record(
            stage=Stage.SYNTAX,
            rule=SYNTAX_RULE,
            severity=Severity.ERROR,
            location=Location(path, 1, 0, 1, 0),
            message=f"cannot read notebook: {exc}",
        )
        return FileResult(path, (record,), None)
    cells = tuple(tuple(c.source.splitlines()) for c in result.notebook.cells)
    return FileResult(path, tuple(result.records), None, cells=cells)


def unreadable_record(path: str, message: str) -> Record:
    """A file the checker refused to read (not a regular file, too large, a link out)."""
    return Record(
        stage=Stage.INTERNAL,
        rule=UNREADABLE_RULE,
        severity=Severity.ERROR,
        location=Location(path, 1, 0, 1, 0),
        message=message,
        hint="only regular files inside the workspace, up to "
        f"{MAX_FILE_BYTES // (1024 * 1024)} MB, are checked",
    )


def _not_checked(exc: UnreadableFileError) -> str:
    if isinstance(exc, FileTooLargeError):
        mb = 1024 * 1024
        return f"file is {exc.size / mb:.1f} MB; larger than the {exc.limit / mb:.0f} MB limit; not checked"
    return exc.reason.replace("; not read", "; not checked")


def _link_outside(path: Path, settings: Settings) -> str | None:
    """Why a symlink is not followed: it leads out of the workspace (its pyproject's folder, else
    its repository, else the folder holding the link). None: not a link, or one that stays in."""
    if not path.is_symlink():
        return None
    root = settings.root or repository_root(path.parent) or path.parent.absolute()
    target = path.resolve()
    if target.is_relative_to(root.resolve()):
        return None
    return f"a symlink to a file outside the workspace {root}; not checked"


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def project_index(paths: Sequence[Path], table: BuiltinTable | None = None) -> ProjectIndex:
    """The workspace model of a check: every Python file under ``paths`` and the packages enclosing
    them (files outside ``paths`` are indexed, not reported); summaries are built on first use."""
    from warp_harness.model.project import ProjectIndex

    return ProjectIndex.for_paths(paths, display=_display, builtins=table)


def check_paths(paths: Sequence[Path], overrides: Mapping[str, Any] | None = None) -> list[FileResult]:
    table = _builtins()
    files = list(iter_python_files(paths, overrides))
    index = project_index(paths, table)

    def analyse(data: bytes, shown: str, settings: Settings, builtins: BuiltinTable | None) -> FileResult:
        return check_bytes(data, shown, settings, builtins, project=index.view(shown))

    return [check_file(p, overrides, builtins=table, analyse=analyse) for p in files]


def missing_paths(paths: Sequence[Path]) -> list[Path]:
    return [p for p in paths if not p.exists()]


__all__ = [
    "Analysis",
    "analyse_source",
    "check_bytes",
    "check_file",
    "check_paths",
    "iter_python_files",
    "kept_lines",
    "missing_paths",
    "project_index",
    "replace",
    "scoped_records",
]
