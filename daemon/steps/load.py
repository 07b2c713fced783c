"""Step ``import``: import the saved module (fresh, with its workspace dependencies) and find
its kernels and contracts."""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import warp as _warp

from warp_harness import contract as contract_api
from warp_harness.daemon import findings as F
from warp_harness.daemon import hermetic_build
from warp_harness.daemon.discovery import contract_siblings, kernel_positions
from warp_harness.daemon.hermetic_build import module_name_for
from warp_harness.daemon.steps import JobSpec, KernelInfo, LoadedModule, Progress, StepContext
from warp_harness.record import Record, Severity, Stage

wp: Any = _warp  # Warp's annotations are partial; keep its calls untyped


def _harness_roots() -> tuple[str, ...]:
    """The folders the harness's own modules really live in. Each *file* is resolved before
    taking its folder: in a tree of per-file links (warp_harness/contract.py -> warp_harness/contract.py)
    the link's folder is not where the code is, and the harness's modules inside a workspace
    (its own repository) would be purged and re-imported, giving a second Contract class."""
    files = [contract_api.__file__, F.__file__]  # warp_harness/, daemon/
    spec = importlib.util.find_spec("warp_harness.rules")
    if spec is not None and spec.origin:
        files.append(spec.origin)  # rules/
    return tuple(sorted({str(Path(os.path.realpath(f)).parent) for f in files if f}))


_HARNESS_ROOTS = _harness_roots()


_LIBRARY_ROOTS = (*_HARNESS_ROOTS, sys.prefix, sys.base_prefix, sys.exec_prefix)
_OUTSIDE: set[str] = set()  # module files known to be library code (never workspace files)


def _in_workspace(file: str | None, workspace: Path) -> bool:
    """Whether a module file is workspace code. Every save walks all of ``sys.modules``
    (~800 modules with Warp and numpy): library files are remembered, not resolved again
    (resolving them all cost ~20 ms per save)."""
    if not file or file in _OUTSIDE:
        return False
    try:
        resolved = Path(os.path.realpath(file))
    except OSError:
        return False
    text = str(resolved)
    if "site-packages" in text or text.startswith(_LIBRARY_ROOTS):
        _OUTSIDE.add(file)
        return False
    return resolved.is_relative_to(workspace)


# (workspace, {name: module}): the sys.modules entries the last job's ``_collect_deps`` found to
# be no workspace module; the next purge looks only at the others (one walk of ~800 modules
# per save instead of two)
_CHECKED: tuple[Path | None, dict[str, ModuleType]] = (None, {})


def purge_workspace_modules(workspace: Path) -> None:
    """Forget every module imported from the workspace, so a save is seen by the next import.

    Warp keeps one ``Module`` per Python module name and, on re-import, reuses it with its
    old options (``wp.set_module_options`` of an earlier version of the file, or ours).
    The object itself must stay (its ``cpu_exec_id`` keeps LLVM module handles unique), so
    its options are reset to the defaults a new module would get.
    """
    context: Any = importlib.import_module("warp._src.context")

    purged = []
    checked = _CHECKED[1] if _CHECKED[0] == workspace else {}
    for name, mod in list(sys.modules.items()):
        if checked.get(name) is mod:
            continue
        if _in_workspace(getattr(mod, "__file__", None), workspace):
            del sys.modules[name]
            purged.append(name)
    defaults = context.Module("_wh_defaults", None).options
    for name in purged:
        for key in [n for n in context.user_modules if n == name or n.startswith(f"{name}__wh_")]:
            module = context.user_modules[key]
            module.options = dict(defaults)
            forget_kernels(module)
            module.mark_modified()
    importlib.invalidate_caches()


def forget_kernels(module: Any) -> None:
    """Drop every kernel, function and struct an earlier import registered in a Warp module.

    Warp builds (and hashes) every kernel of ``Module._live_kernels``, a WeakSet of all the
    kernel objects ever created in the module that are still referenced, and old versions
    stay referenced after a re-import. Without this, each save added its kernels' previous
    versions to the next build: the generated C++ grew by one copy per save, compile time
    grew by about 70 ms per save in a warm worker, and the module hash (hence the kernel
    cache key) depended on the edit history instead of the source. The re-import
    registers the current definitions again.
    """
    live = getattr(module, "_live_kernels", None)
    if live is not None and hasattr(live, "clear"):
        live.clear()
    for attr in ("kernels", "functions", "structs"):
        if isinstance(getattr(module, attr, None), dict):
            setattr(module, attr, {})


def _file_sha(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _error_line(exc: BaseException, path: Path) -> tuple[int, int]:
    if isinstance(exc, SyntaxError) and exc.lineno and exc.filename and Path(exc.filename).resolve() == path:
        return exc.lineno, max((exc.offset or 1) - 1, 0)
    line = 1
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if Path(frame.filename).resolve() == path and frame.lineno:
                line = frame.lineno
        except OSError:
            continue
    return line, 0


# SHA-256 of the source each workspace file was last compiled from, by real path: the text
# a job imported, to compare with the text the daemon's static tier analysed
_COMPILED_SHA: dict[str, str] = {}


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles a workspace module from its source every time, never from ``__pycache__``.

    A .pyc is trusted when the source's size and mtime (whole seconds) match its header: a
    save within the same second that keeps the size (``OFFSET = 5.0`` -> ``OFFSET = 1.0``)
    would run the previous version. Nothing is written to the workspace's ``__pycache__``.
    """

    def get_code(self, fullname: str) -> Any:
        path = self.get_filename(fullname)
        data = self.get_data(path)
        _COMPILED_SHA[os.path.realpath(path)] = hashlib.sha256(data).hexdigest()
        return self.source_to_code(data, path)


class _WorkspaceSourceFinder(importlib.abc.MetaPathFinder):
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if (
            spec is None
            or spec.origin is None
            or type(loader) is not importlib.machinery.SourceFileLoader
            or not _in_workspace(spec.origin, self.workspace)
        ):
            return None
        spec.loader = _SourceOnlyLoader(fullname, spec.origin)
        return spec


def _import(loading: _Loading, name: str, sys_path: Path) -> ModuleType | None:
    entry = str(sys_path)
    if entry not in sys.path:
        sys.path.insert(0, entry)
    finder = _WorkspaceSourceFinder(loading.workspace)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module(name)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | MemoryError):
            raise
        line, col = _error_line(exc, loading.path)
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        loading.add(
            F.make_record(
                Stage.SYNTAX if isinstance(exc, SyntaxError) else Stage.COMPILE,
                F.IMPORT_ERROR,
                Severity.ERROR,
                loading.display_path,
                line,
                f"importing the module failed: {text}",
                col=col,
                hint="fix the error above; Warp raises missing annotations at decoration (import) time",
            )
        )
        return None
    finally:
        sys.meta_path.remove(finder)


@dataclass
class _Loading:
    """The import while it runs (``load`` freezes it into a ``LoadedModule``)."""

    step: StepContext
    source_sha256: str | None
    source_lines: list[str] = field(default_factory=list)
    module: ModuleType | None = None
    kernels: dict[str, KernelInfo] = field(default_factory=dict)
    contracts: list[contract_api.Contract] = field(default_factory=list)
    contract_files: list[Path] = field(default_factory=list)
    deps: list[tuple[str, str]] = field(default_factory=list)
    stale: bool = False

    @property
    def path(self) -> Path:
        return self.step.path

    @property
    def workspace(self) -> Path:
        return self.step.workspace

    @property
    def display_path(self) -> str:
        return self.step.display_path

    def add(self, record: Record) -> None:
        self.step.add(record)

    def loaded(self, ok: bool) -> LoadedModule:
        return LoadedModule(
            ok=ok,
            stale=self.stale,
            records=tuple(self.step.records),
            notes=dict(self.step.notes),
            source_lines=tuple(self.source_lines),
            source_sha256=self.source_sha256,
            module=self.module,
            kernels=dict(self.kernels),
            contracts=tuple(self.contracts),
            contract_files=tuple(self.contract_files),
            deps=tuple(self.deps),
        )


def _is_stale(loading: _Loading, sha: str | None) -> bool:
    """Whether the text the worker read differs from the one the job was made for (the file
    was saved again after the daemon read it): marks the job stale, its records dropped."""
    if loading.source_sha256 is None or sha is None or sha == loading.source_sha256:
        return False
    loading.stale = True
    loading.step.records.clear()
    loading.step.notes["stale"] = {"expected": loading.source_sha256, "found": sha}
    return True


def load(spec: JobSpec, progress: Progress) -> LoadedModule:
    """Import ``spec.path``: the module, its kernels, contracts and deps; not ``ok`` if it did not
    import, or if the file is no longer the text the job was made for (``stale``)."""
    loading = _Loading(StepContext(spec, progress), spec.expected_sha256)
    return loading.loaded(_load(loading))


def _load(loading: _Loading) -> bool:
    purge_workspace_modules(loading.workspace)
    for sibling in contract_siblings(loading.path):  # a module planted under its name by an earlier job
        sys.modules.pop(module_name_for(sibling)[0], None)
    # no workspace module is left in sys.modules: _collect_deps looks only at what the import adds
    library = dict(sys.modules)
    data = loading.path.read_bytes()
    if _is_stale(loading, hashlib.sha256(data).hexdigest()):
        return False
    source = data.decode("utf-8", errors="replace")
    loading.source_lines = source.splitlines()
    loading.step.source_lines = tuple(loading.source_lines)
    name, root = module_name_for(loading.path)
    hermetic = _load_hermetic(loading, source, name, root)
    if isinstance(hermetic, str) and not loading.step.spec.may_import:
        # not hermetic by this worker's reading of the texts, and the supervisor has not agreed:
        # nothing of the module runs; the supervisor decides and asks again (or drops the job)
        loading.stale = True
        loading.step.records.clear()
        loading.step.notes["needs_import"] = hermetic
        return False
    if not isinstance(hermetic, str):
        module: ModuleType | None = hermetic
        loading.source_sha256 = hashlib.sha256(data).hexdigest()
    else:
        _COMPILED_SHA.pop(str(loading.path), None)
        module = _import(loading, name, root)
        # the import read the file again: it must still be the same text
        if _is_stale(loading, _COMPILED_SHA.get(str(loading.path))):
            return False
        loading.source_sha256 = _COMPILED_SHA.get(str(loading.path), hashlib.sha256(data).hexdigest())
    if module is None:
        _collect_deps(loading, library)
        return False
    loading.module = module
    positions = _positions(loading, source)
    for value in list(vars(module).values()):
        if not isinstance(value, wp.Kernel) or getattr(value.func, "__module__", None) != module.__name__:
            continue
        fname = value.func.__name__
        line, col, end_col = positions.get(fname, (1, 0, 0))
        if fname not in loading.kernels:
            loading.kernels[fname] = KernelInfo(fname, line, col, end_col, value, runnable=value)
    contracts = contract_api.discover(vars(module))
    for sibling in contract_siblings(loading.path):
        sib_mod = _import(loading, module_name_for(sibling)[0], module_name_for(sibling)[1])
        if sib_mod is not None and not _is_file_module(sib_mod, sibling):
            _planted(loading, sibling)
            continue
        if sib_mod is not None:
            loading.contract_files.append(sibling)
            contracts.extend(c for c in contract_api.discover(vars(sib_mod)) if c not in contracts)
    loading.contracts = contracts
    for c in contracts:
        _attach(loading, c)
    _collect_deps(loading, library)
    return True


def _load_hermetic(loading: _Loading, source: str, name: str, root: Path) -> ModuleType | str | None:
    """The kernel module built from its text (``hermetic_build.build_module``) and put in
    ``sys.modules`` under its name, its sibling contract modules imported against it; a str:
    why it cannot be (``hermetic_build.why_not``, which the supervisor runs on the same text to
    report WHD069; the module is then imported, its top-level code runs); None: it can, but the
    build or the contract's import failed (an error record; the module is not imported).

    On this path the module's top-level code never runs in this process: the sibling contract's
    ``from scale import scale`` gets the hermetic build's kernels, funcs, structs and constants,
    and a contract the module defines itself is taken from its text with only what it reaches
    (``hermetic_contract``), into the same fresh module."""
    siblings = contract_siblings(loading.path)
    texts = [(s.name, s.read_text(encoding="utf-8", errors="replace")) for s in siblings]
    reason = hermetic_build.why_not(source, str(loading.path), name, texts)
    if reason is not None:
        return reason
    try:
        module = hermetic_build.build_module(source, str(loading.path), name)
    except (hermetic_build.NotHermetic, SyntaxError, ValueError, RecursionError) as exc:
        _hermetic_failed(loading, exc, "building the module's kernels from its text failed")
        return None
    sys.modules[name] = module
    for sibling in siblings:
        sib_name, sib_root = module_name_for(sibling)
        for entry in (str(sib_root), str(root)):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        finder = _WorkspaceSourceFinder(loading.workspace)
        sys.meta_path.insert(0, finder)
        try:
            importlib.import_module(sib_name)
        except Exception as exc:
            sys.modules.pop(name, None)
            what = f"importing its contract module `{sibling.name}` against the hermetic build failed"
            _hermetic_failed(loading, exc, what)
            return None
        finally:
            sys.meta_path.remove(finder)
    return module


def _hermetic_failed(loading: _Loading, exc: BaseException, what: str) -> None:
    cause = exc.__cause__ if isinstance(exc.__cause__, Exception) else exc
    line, col = _error_line(cause, loading.path)
    text = "".join(traceback.format_exception_only(type(cause), cause)).strip()
    loading.add(
        F.make_record(
            Stage.COMPILE,
            F.IMPORT_ERROR,
            Severity.ERROR,
            loading.display_path,
            line,
            f"{what}: {text}",
            col=col,
            hint="fix the error above; Warp raises missing annotations at decoration time",
        )
    )


def _positions(loading: _Loading, source: str) -> dict[str, tuple[int, int, int]]:
    """The kernels' positions in ``source``: the supervisor's when it parsed this very text."""
    known = loading.step.spec.known_positions
    if (
        known is not None
        and loading.step.spec.known_positions_sha256 == hashlib.sha256(source.encode("utf-8")).hexdigest()
    ):
        return known
    return kernel_positions(source)


def _is_file_module(module: ModuleType, path: Path) -> bool:
    """Whether ``module`` was loaded from ``path`` (not a module code planted in
    ``sys.modules`` under the sibling contract's name before the import)."""
    file = getattr(module, "__file__", None)
    return isinstance(file, str) and os.path.realpath(file) == os.path.realpath(path)


def _planted(loading: _Loading, sibling: Path) -> None:
    loading.add(
        F.make_record(
            Stage.NUMERIC,
            F.CONTRACT_TAMPERED,
            Severity.ERROR,
            loading.display_path,
            next((i + 1 for i, t in enumerate(loading.source_lines) if "sys.modules" in t), 1),
            f"the contract module `{sibling.stem}` was already imported, and not from {sibling.name}: "
            "code that ran before it put another module under its name; its contracts were not used",
            hint="do not import, replace or pre-load the contract module from the kernel's module",
        )
    )


def _attach(loading: _Loading, c: contract_api.Contract) -> None:
    name = c.kernel_name
    info = loading.kernels.get(name)
    if info is None:
        # a contract may name a kernel by the attribute it is bound to
        value: Any = getattr(loading.module, name, None)
        if isinstance(value, wp.Kernel):
            info = loading.kernels.get(value.func.__name__)
    if info is None:
        line = next((i + 1 for i, t in enumerate(loading.source_lines) if name in t and "kernel" in t), 1)
        loading.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_ERROR,
                Severity.ERROR,
                loading.display_path,
                line,
                f"contract `{c.label}` names kernel `{name}`, which this module does not define",
                hint=f"set kernel= to one of: {', '.join(sorted(loading.kernels)) or '(no kernels)'}",
            )
        )
        return
    if info.contract is not None:
        loading.add(
            F.make_record(
                Stage.NUMERIC,
                F.CONTRACT_ERROR,
                Severity.WARNING,
                loading.display_path,
                info.line,
                f"kernel `{info.name}` has several contracts; only `{info.contract.label}` is used",
                kernel=info.name,
            )
        )
        return
    loading.kernels[info.name] = replace(info, contract=c)


def _collect_deps(loading: _Loading, library: dict[str, ModuleType]) -> None:
    """``loading.deps``: the workspace files imported; ``library``: sys.modules before the import,
    when it held no workspace module (only modules added or replaced since are looked at)."""
    # the text imported, not the file as it is now: a result is cached under the text it describes
    global _CHECKED
    seen: dict[str, str] = {str(loading.path): loading.source_sha256 or _file_sha(loading.path)}
    checked = dict(library)
    for name, mod in list(sys.modules.items()):
        if library.get(name) is mod:
            continue
        file = getattr(mod, "__file__", None)
        if _in_workspace(file, loading.workspace) and file:
            p = Path(file).resolve()
            seen.setdefault(str(p), _file_sha(p))
        else:
            checked[name] = mod
    _CHECKED = (loading.workspace, checked)
    for sibling in contract_siblings(loading.path):
        seen.setdefault(str(sibling), _file_sha(sibling))
    loading.deps = sorted(seen.items())
