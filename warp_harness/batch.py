"""`check` over many files: a process pool over files, the result cache, and only the source lines
the output needs.

Results come back in the order :func:`~warp_harness.engine.iter_python_files` yields the files,
whatever the number of processes, so output is the same for ``--jobs 1`` and ``--jobs N``. Small
inputs (fewer than :data:`MIN_PARALLEL_FILES` files) stay in this process: a pool costs more than it
saves there.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from warp_harness.config import Settings, load_settings
from warp_harness.engine import (
    SYMTABLE_MIN_CHARS,
    KeepLines,
    check_bytes,
    check_file,
    iter_python_files,
    kept_lines,
)
from warp_harness.output.model import FileResult

if TYPE_CHECKING:
    import re

    from warp_harness.builtins import BuiltinTable
    from warp_harness.check_cache import CheckCache
    from warp_harness.model.project import ProjectIndex

# which source lines a FileResult keeps: every line, only the lines records point at (the others
# are ""), or none. Formats that show no source text need none: newton's 819k lines were held to
# the end of the run otherwise.
Lines = Literal["all", "records", "none"]
# renderers that read FileResult.line_text (text excerpts, SARIF snippets, GitLab fingerprints)
_FORMATS_READING_LINES = frozenset({"text", "sarif", "gitlab"})
MIN_PARALLEL_FILES = 4


def lines_for_format(output_format: str) -> Lines:
    return "records" if output_format in _FORMATS_READING_LINES else "none"


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class _Job:
    overrides: Mapping[str, Any] | None
    lines: Lines
    cache: CheckCache | None
    table: BuiltinTable | None  # None: loaded where first needed
    # the workspace model (every file under the roots and their packages), summarised lazily per process
    project: ProjectIndex | None = None
    # the roots the workspace model is built from when first needed (`project_for`)
    roots: Sequence[Path] = ()
    # folder -> the settings of its files (`settings_for`)
    settings: dict[Path, Settings] = field(default_factory=dict)
    # `check_bytes`: from what size a file without kernels is syntax-checked by symtable, without its tree
    # (a third of ast.parse's time); every size in a check of many files, which pays symtable's import once
    symtable_from: int = SYMTABLE_MIN_CHARS

    def settings_for(self, path: Path) -> Settings:
        """``load_settings(path, overrides)``, loaded once per folder: the search for a pyproject starts at
        the folder the file resolves into, the same for every file of a folder that is not a symlink. Not
        shared when per-file-ignores name files."""
        if path.is_symlink():  # its settings: those of its target's folder
            return load_settings(path, self.overrides)
        settings = self.settings.get(path.parent)
        if settings is None:
            settings = load_settings(path, self.overrides)
            if not settings.per_file_ignores:
                self.settings[path.parent] = settings
        return settings

    def project_for(self, data: bytes) -> ProjectIndex | None:
        """The workspace model, built on first use by a file that may launch a kernel: one without the
        word never has launch sites, so the model changes nothing in its records (checking a file of a
        large folder does not walk the folder). A coding line can spell the word in other bytes, and a
        file that is not ASCII in other letters (``wp.ｌａｕｎｃｈ``: `model.source.may_spell`)."""
        if (
            self.project is None
            and self.roots
            and (b"launch" in data or b"coding" in data[:512] or not data.isascii())
        ):
            from warp_harness.builtins import load_table
            from warp_harness.engine import project_index

            self.project = project_index(self.roots, self.table or load_table())
        return self.project


# set in this process before the pool forks (or by the pool's initializer): what every file needs
_job: _Job | None = None


def _init_worker(job: _Job) -> None:
    global _job
    _job = job
    # a worker only checks files, then ends: what its parses freeze is never unfrozen (`frozen_parses`)
    from warp_harness.model.parse_freezing import freeze_parses

    freeze_parses()


def _keep(lines: Lines) -> KeepLines:
    return "records" if lines == "records" else lines == "all"


def _source_lines(data: bytes, records: tuple[Any, ...], lines: Lines) -> tuple[str, ...] | None:
    """The lines check_bytes would attach to ``data``'s result, trimmed to what ``lines`` asks."""
    if lines == "none":
        return None
    from warp_harness.model.source import decode_source  # only here: a check that needs no lines skips it

    text, _ = decode_source(data)
    if text is None:
        return None
    return kept_lines(text.splitlines(keepends=True), records, _keep(lines))


def _analyse(data: bytes, shown: str, settings: Settings, table: BuiltinTable | None) -> FileResult:
    job = _job
    assert job is not None
    cache = job.cache
    key = ""
    if cache is not None:
        key = cache.key(data, shown, settings)
        cached = _cached(job, cache, key, data, shown)
        if cached is not None:
            return cached
    project = job.project_for(data)
    view = project.view(shown) if project is not None else None
    handed = [data]  # not held here while it is analysed (`engine.check_bytes`)
    del data
    result = check_bytes(
        handed.pop(),
        shown,
        settings,
        table,
        project=view,
        keep_lines=_keep(job.lines),
        symtable_from=job.symtable_from,
    )
    if cache is not None:
        # the modules its launches resolved against (and failed to): their digests key the entry too
        cache.put(key, result.records, view.deps if view is not None else None)
    return result


def _cached(job: _Job, cache: CheckCache, key: str, data: bytes, shown: str) -> FileResult | None:
    """The result the cache holds for ``data`` under ``key``, if still current."""

    def current(module: str) -> str | None:
        # the workspace model only for an entry that depends on other modules
        project = job.project_for(data)
        return project.digest(module) if project is not None else None

    records = cache.get(key, current)
    if records is None:
        return None
    return FileResult(shown, records, _source_lines(data, records, job.lines))


def _check_one(path: Path) -> FileResult:
    job = _job
    assert job is not None
    # No cyclic GC while this file's tree and model are alive: they are big, acyclic in the main and
    # freed by reference counting; a collection would only traverse them (8-13% of check's time).
    # It runs again between files, when there is little to traverse.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return check_file(
            path, job.overrides, builtins=job.table, analyse=_analyse, settings=job.settings_for(path)
        )
    finally:
        if enabled:
            gc.enable()
            # the cycles this file left (few, small) are freed now, while its tree's memory is free: left
            # for the next automatic collection, they pin the allocator's arenas (peak RSS 326 -> 137 MB
            # over newton with --jobs 1); the collection only sees what this file built after its parse
            # and kept (the trees are frozen once parsed: `model.parse_freezing`)
            gc.collect(0)


def _check_group(paths: list[Path]) -> list[FileResult]:
    return [_check_one(p) for p in paths]


def _check_here(paths: list[Path], order: Sequence[int] | None = None) -> list[FileResult]:
    """``paths`` checked in this process (in ``order``, a permutation of their positions, when given;
    returned in their own order), each file's tree frozen once parsed (`frozen_parses`)."""
    from warp_harness.model.parse_freezing import frozen_parses

    with frozen_parses():
        if order is None:
            return [_check_one(p) for p in paths]
        results = {i: _check_one(paths[i]) for i in order}
    return [results[i] for i in range(len(paths))]


# `from .kernels import a, b as c` / `import pkg.kernels as k`, and the name a launch's kernel starts
# with (`wp.launch(kernels.step, ...)`, `wp.launch(kernel=step, ...)`): read from the bytes, no parse.
# Each starts with its keyword, which the regex engine then scans for (a `^` or `\b` first costs 10x);
# `_at_word_start` filters the matches
_FROM_IMPORT = rb"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)"
_IMPORT = rb"import[ \t]+([^\n#;]*)"
_LAUNCHED = rb"launch(?:_tiled)?[ \t]*\(\s*(?:kernel[ \t]*=[ \t]*)?([A-Za-z_]\w*)"


def launch_targets(
    files: Sequence[Path], index_for: Callable[[bytes], ProjectIndex | None]
) -> dict[int, int]:
    """Launcher position -> the position of the largest other file among ``files`` its launches name an
    imported kernel from: a guess from the bytes, for the order files are checked in, never their
    records. ``index_for``: the workspace model, given a launcher's bytes (`_Job.project_for`)."""
    import re

    from warp_harness.safe_read import read_regular

    patterns = _Patterns(*(re.compile(r) for r in (_FROM_IMPORT, _IMPORT, _LAUNCHED, rb"\w+")))
    position = {os.path.abspath(p): i for i, p in enumerate(files)}
    targets: dict[int, int] = {}
    for i, path in enumerate(files):
        try:
            data = read_regular(path)
        except (OSError, ValueError):
            continue
        if b"launch" not in data:
            continue
        launched = {
            m.group(1) for m in patterns.launched.finditer(data) if _at_word_start(data, m.start(), False)
        }
        index = index_for(data) if launched else None
        module = index.module_of(path) if index is not None else None
        if index is None or module is None:
            continue
        names = _imported_modules(index, module, path.name == "__init__.py", launched, data, patterns)
        found = {position[p] for p in (str(index.path_of(n)) for n in names) if p in position} - {i}
        if found:
            targets[i] = max(found, key=lambda t: (_size(files[t]), -t))
    return targets


@dataclass(frozen=True)
class _Patterns:
    from_import: re.Pattern[bytes]
    plain_import: re.Pattern[bytes]
    launched: re.Pattern[bytes]
    word: re.Pattern[bytes]


def _imported_modules(
    index: ProjectIndex, module: str, package: bool, launched: set[bytes], data: bytes, patterns: _Patterns
) -> Iterator[str]:
    """The modules ``module`` imports one of the ``launched`` names from (or as)."""
    from warp_harness.model.project import resolve_relative

    for m in patterns.from_import.finditer(data):
        imported = m.group(3)
        # most imports name nothing launched: skipped on a set of their words
        if launched.isdisjoint(patterns.word.findall(imported)) or not _at_word_start(data, m.start(), True):
            continue
        base = resolve_relative(module, package, len(m.group(1)), m.group(2).decode() or None)
        if base is None:
            continue
        for item in imported.strip(b"()").split(b","):
            name, _, alias = (part.strip() for part in item.partition(b" as "))
            if (alias or name) in launched:
                sub = f"{base}.{name.decode('ascii', 'replace')}"  # `from pkg import kernels`: the submodule
                yield sub if index.path_of(sub) is not None else base
    for m in patterns.plain_import.finditer(data):
        imported = m.group(1)
        if launched.isdisjoint(patterns.word.findall(imported)) or not _at_word_start(data, m.start(), True):
            continue
        for item in imported.split(b","):
            name, _, alias = (part.strip() for part in item.partition(b" as "))
            if alias in launched:
                yield name.decode("ascii", "replace")


def _at_word_start(data: bytes, start: int, statement: bool) -> bool:
    """Whether the match at ``start`` begins a word (``statement``: the first one of its line)."""
    if not statement:
        return start == 0 or not (data[start - 1 : start].isalnum() or data[start - 1] == 0x5F)
    line = data.rfind(b"\n", 0, start) + 1
    return not data[line:start].strip(b" \t")


def check_units(
    count: int, targets: Mapping[int, int], sizes: Sequence[int] = (), room: int = 0
) -> list[tuple[int, list[int]]]:
    """Positions ``0..count-1`` as runs checked one after the other, each with the file it is built around:
    a file, then the files launching into it (``targets``: launcher -> target), each followed by its own
    launchers. The process's model of the target (its tree and the kernels already inferred) is then
    still cached for them: checked where they lie, newton re-parsed 8.6 MB of kernel modules evicted in
    between. Runs start in file order.

    A launcher launched into by none whose size (``sizes``) and its target's exceed ``room`` (what the
    process keeps of other modules' models) goes right before its target instead: after, its check
    would evict the target, rebuilt for it; before, the model it builds of the target is the one the
    target's own check then reuses."""
    parent = dict(targets)
    for start in range(count):  # a cycle (two modules launching each other's kernels) is cut
        seen = {start}
        node = parent.get(start)
        while node is not None and node not in seen:
            seen.add(node)
            node = parent.get(node)
        if node == start:
            del parent[start]
    before: dict[int, list[int]] = {}
    after: dict[int, list[int]] = {}
    for child in range(count):
        if child in parent:
            target = parent[child]
            too_large = bool(sizes) and sizes[child] + sizes[target] > room
            (before if too_large else after).setdefault(target, []).append(child)
    for target, first in before.items():  # only leaves go before: their own launchers follow them
        for child in [c for c in first if c in before or c in after]:
            first.remove(child)
            after.setdefault(target, []).append(child)
    for children in after.values():
        children.sort()
    units: list[tuple[int, list[int]]] = []
    for root in range(count):
        if root in parent:
            continue
        unit: list[int] = []
        stack = [root]
        while stack:
            node = stack.pop()
            unit.extend(before.get(node, ()))
            unit.append(node)
            stack.extend(reversed(after.get(node, ())))
        units.append((root, unit))
    return units


def _model_room() -> int:
    from warp_harness.model.project import MODEL_CACHE_BYTES

    return MODEL_CACHE_BYTES


def folder_groups(
    files: Sequence[Path], workers: int, targets: Mapping[int, int] | None = None
) -> list[list[int]]:
    """The positions of ``files`` split into the pool's tasks: a folder's files together (the modules a
    file's launches resolve into are mostly its neighbours: one process then parses and models each
    once, where spreading a folder over the processes had every one of them do it) and a file's
    launchers elsewhere right after it (`check_units`), a large folder in pieces so that every process
    has work, the largest tasks (in bytes) first so that they end together.
    """
    by_folder: dict[Path, list[list[int]]] = {}
    sizes = [_size(p) for p in files]
    for root, unit in check_units(len(files), targets or {}, sizes, _model_room()):
        by_folder.setdefault(files[root].parent, []).append(unit)
    budget = max(1, sum(sizes) // (workers * 4))
    groups: list[list[int]] = []
    for units in by_folder.values():
        group: list[int] = []
        total = 0
        for unit in units:
            unit_size = sum(sizes[i] for i in unit)
            if group and total + unit_size > budget:
                groups.append(group)
                group, total = [], 0
            if unit_size <= 2 * budget:  # a run is split only when far larger than a task
                group.extend(unit)
                total += unit_size
                continue
            for position in unit:
                if group and total + sizes[position] > budget:
                    groups.append(group)
                    group, total = [], 0
                group.append(position)
                total += sizes[position]
        groups.append(group)
    groups.sort(key=lambda g: sum(sizes[i] for i in g), reverse=True)
    return groups


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _pool_context() -> Any:
    # fork: workers inherit the imported rules and the loaded builtin table instead of loading them again
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def check_files(
    paths: Sequence[Path],
    overrides: Mapping[str, Any] | None = None,
    *,
    jobs: int | None = None,
    cache: bool | CheckCache = False,
    lines: Lines = "all",
) -> list[FileResult]:
    """One FileResult per Python file under ``paths``, in :func:`iter_python_files` order.

    ``jobs``: processes (default: the CPUs this process may use). ``cache``: True for the user's
    result cache (skipped with a warning when its folder cannot be trusted), or a CheckCache.
    """
    global _job
    files = list(iter_python_files(paths, overrides))
    if not files:
        return []
    store: CheckCache | None = None
    if cache is True:
        from warp_harness.check_cache import open_cache, table_identity

        store = open_cache(table_identity(), warn=lambda line: print(line, file=sys.stderr))
    elif cache is not False:
        store = cache
    jobs = default_jobs() if jobs is None else max(1, jobs)
    job = _Job(overrides, lines, store, None, roots=list(paths))
    if len(files) >= MIN_PARALLEL_FILES:
        job.symtable_from = 0
    _job = job
    # Files are checked launchers next to their targets (`check_units`), found by reading every file
    # first: with a result cache most files are not analysed, and that read would cost a warm check more
    # (0.1 of its 0.45 s CPU over newton) than the order saves
    ordered = store is None and len(files) >= MIN_PARALLEL_FILES
    if jobs == 1 or len(files) < MIN_PARALLEL_FILES:
        if not ordered:
            return _check_here(files)
        # the table and the workspace model are loaded by the first file that needs them (`project_for`)
        targets = launch_targets(files, job.project_for)
        units = check_units(len(files), targets, [_size(p) for p in files], _model_room())
        return _check_here(files, [i for _, unit in units for i in unit])
    from warp_harness.builtins.loader import load_table

    table = job.table = load_table()
    from warp_harness.engine import project_index

    # built before the pool forks: every process shares the walk and the module names
    project = job.project = project_index(paths, table)
    targets = launch_targets(files, lambda _: project) if ordered else {}
    return _in_pool(files, job, min(jobs, len(files)), targets)


def _in_pool(files: list[Path], job: _Job, workers: int, targets: Mapping[int, int]) -> list[FileResult]:
    from concurrent.futures import ProcessPoolExecutor  # only here: 10+ ms of imports a small check skips
    from concurrent.futures.process import BrokenProcessPool

    import warp_harness.rules  # noqa: F401  (imported once here, not in every worker)

    # Everything loaded so far (modules, the builtin table) lives to the end: frozen, the workers'
    # collections neither traverse it nor touch (and so copy) its forked pages.
    gc.collect()
    gc.freeze()
    try:
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=_pool_context(), initializer=_init_worker, initargs=(job,)
        ) as pool:
            groups = folder_groups(files, workers, targets)
            done = pool.map(_check_group, [[files[i] for i in group] for group in groups])
            results = {
                i: result
                for group, found in zip(groups, done, strict=True)
                for i, result in zip(group, found, strict=True)
            }
            return [results[i] for i in range(len(files))]
    except BrokenProcessPool:
        # a worker was killed (out of memory, a signal): one line, then the files in this process
        print("warp-harness: warning: a check process died; checking in one process", file=sys.stderr)
        return _check_here(files)
    finally:
        gc.unfreeze()


__all__ = [
    "MIN_PARALLEL_FILES",
    "check_files",
    "check_units",
    "default_jobs",
    "folder_groups",
    "launch_targets",
    "lines_for_format",
]
