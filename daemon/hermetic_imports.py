"""Which workspace file a hermetically built module's import names, and its text (issue #37 item 1).

A kernel may call a ``@wp.func`` (or read a ``@wp.struct``, a constant) imported from another
module of the workspace. The hermetic build (``hermetic_build``) follows such an import from the
texts alone: this module finds the file an import names, the way the static model names modules
(``warp_harness.model.project``: a file's dotted name counts from the nearest folder above it
without an ``__init__.py``, relative imports resolve against it), and reads it as text, never
importing it.

Only files inside ``bound`` (the workspace; else the folder the kernel's module is imported from)
are workspace code: a file whose real path is elsewhere (a symlink out of the workspace) is refused,
not read. ``texts``, when given, is the only source of text (the texts the supervisor decided on,
sent to the worker, which builds from exactly them); otherwise files are read and every text read
is kept in ``read`` (what the supervisor sends on).

**Installed packages** (the captured path, where the workspace is known: ``trust_installed``). A
module that is no workspace file and resolves, on the interpreter's path, to a file outside the
workspace is the user's own environment, trusted as the user is (mujoco-warp's
``MJ_MINVAL = mujoco.mjMINVAL``): the build may import it (``hermetic_build`` binds it). Where it
resolves is found without importing anything (``PathFinder.find_spec`` of the top-level name, then
of each submodule inside the package's own folders: no parent package is imported, no ``.pth`` is
read), and judged by real path: a module inside the workspace (a folder of it on ``PYTHONPATH``, a
virtual environment it ships, a link into either) or found nowhere is refused. The decision keeps
each such module's origin (``installed``; sent to the worker among the texts, under
``INSTALLED + name``); the worker imports the module only from that origin, with the workspace's
folders off ``sys.path`` (``hermetic_build``), never deciding again.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
from pathlib import Path

from warp_harness.daemon.hermetic_contract import NotHermetic
from warp_harness.model.project import module_name, resolve_relative
from warp_harness.safe_read import read_regular

# the libraries a hermetic namespace binds by ``import`` (their own imports are never followed)
LIBRARIES = ("warp", "numpy", "math")
# the libraries a module may import names from (``from typing import Any``, ``from enum import
# IntEnum``, ``from warp.types import vector``): bound from the interpreter's own folders, never
# from the workspace
FROM_LIBRARIES = (*LIBRARIES, "typing", "enum")
MAX_MODULES = 48  # workspace modules one build follows
MAX_BYTES = 16 * 1024 * 1024  # their texts together
MAX_FILE_BYTES = 4 * 1024 * 1024
# the key prefix, among the texts a decision sends the worker, of an installed module's origin
INSTALLED = "installed:"


@dataclass(frozen=True)
class Found:
    """A workspace module: its file (``__init__.py`` for a package, the folder for a namespace
    package) and dotted name."""

    path: str  # real path
    dotted: str
    package: bool  # an ``__init__.py`` or a namespace folder (relative imports count from it)
    folder: bool = False  # a namespace package: no text, only submodules


@dataclass(frozen=True)
class Installed:
    """A module of the user's environment outside the workspace: its dotted name and the real path
    of its top-level module's file (``built-in`` for a module compiled into the interpreter)."""

    name: str
    origin: str


@dataclass
class Sources:
    bound: str  # real path of the folder holding all workspace code
    texts: Mapping[str, str] | None = None
    read: dict[str, str] = field(default_factory=dict)
    _total: int = 0
    trust_installed: bool = False  # modules installed outside the workspace may be imported
    installed: dict[str, str] = field(default_factory=dict)  # top-level name -> origin (``Installed``)

    @classmethod
    def for_file(
        cls, filename: str, workspace: Path | str | None, texts: Mapping[str, str] | None
    ) -> Sources:
        """``workspace`` given (the captured path) trusts installed modules outside it; none (the
        contract path: the folder the module is imported from bounds it) refuses them."""
        trust = workspace is not None
        if workspace is None:
            workspace = import_root(Path(filename))
        sources = cls(os.path.realpath(workspace), dict(texts) if texts is not None else None)
        sources.trust_installed = trust
        if texts is not None and trust:  # the worker: the origins decided on, never looked up again
            sources.installed = {k[len(INSTALLED) :]: v for k, v in texts.items() if k.startswith(INSTALLED)}
        return sources

    def decided(self) -> dict[str, str]:
        """What a decision read: the workspace texts by real path, the installed modules' origins
        under ``INSTALLED + name`` (the worker builds from exactly these)."""
        return {**self.read, **{INSTALLED + k: v for k, v in self.installed.items()}}

    def inside(self, path: str) -> bool:
        return within(self.bound, path)

    def text(self, found: Found) -> str:
        """The module's text (read once per build; from ``texts`` when they were given)."""
        known = self.read.get(found.path)
        if known is not None:
            return known
        if self.texts is not None:
            given = self.texts.get(found.path)
            if given is None:
                raise NotHermetic(
                    f"`{found.dotted}` ({found.path}) is not among the texts the decision was made on"
                )
            text = given
        else:
            try:
                text = read_text(found.path)
            except (OSError, ValueError) as exc:
                raise NotHermetic(f"the workspace module `{found.dotted}` cannot be read ({exc})") from exc
        self._total += len(text)
        if len(self.read) >= MAX_MODULES or self._total > MAX_BYTES:
            raise NotHermetic(
                f"following its imports reaches more than {MAX_MODULES} workspace modules or "
                f"{MAX_BYTES >> 20} MB of text"
            )
        self.read[found.path] = text
        return text


def read_text(path: str) -> str:
    """A workspace module's text (a regular file only, at most ``MAX_FILE_BYTES``)."""
    return read_regular(path, MAX_FILE_BYTES).decode("utf-8", "replace")


def import_root(path: Path) -> Path:
    """The folder ``path``'s module is imported from (its dotted name counts from there)."""
    dotted = module_name(path)
    up = dotted.count(".") + (1 if path.name == "__init__.py" else 0)
    folder = Path(os.path.abspath(path)).parent
    for _ in range(up):
        folder = folder.parent
    return folder


def find(sources: Sources, importer: str, level: int, module: str | None) -> Found | str | Installed | None:
    """The module ``from <level dots><module> import`` (or ``import <module>``) in the file
    ``importer`` names: a workspace module, the name of a library of ``LIBRARIES`` (a str), a
    module installed outside the workspace (``Installed``, where trusted), or None (none of
    these). ``NotHermetic`` for a file whose real path is outside the workspace, and for an
    installed module that resolves inside it."""
    path = Path(importer)
    dotted = module_name(path)
    package = path.name == "__init__.py" or path.is_dir()
    absolute = resolve_relative(dotted, package, level, module)
    if absolute is None:
        return None
    if level == 0 and absolute.split(".")[0] in FROM_LIBRARIES:
        return absolute
    root = import_root(path) if not path.is_dir() else import_root(path / "__init__.py")
    bases = [root]
    if level == 0:  # the folders above, up to the workspace (the worker's sys.path holds them)
        folder = root
        while sources.inside(os.path.realpath(folder.parent)) and folder.parent != folder:
            folder = folder.parent
            bases.append(folder)
    for base in bases:
        found = _under(sources, base, absolute)
        if found is not None:
            return found
    if level == 0 and sources.trust_installed:
        return installed(sources, absolute)
    return None


def installed(sources: Sources, dotted: str) -> Installed | None:
    """``dotted`` as a module of the user's environment outside the workspace (None: not found, or
    not among the origins the decision sent); ``NotHermetic`` when it resolves inside the
    workspace. Nothing is imported: ``PathFinder`` looks the names up in the path's folders."""
    parts = dotted.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    top = parts[0]
    if sources.texts is not None:  # the worker builds from the decision's origins only
        origin = sources.installed.get(top)
        return Installed(dotted, origin) if origin is not None else None
    if top in sys.builtin_module_names:
        sources.installed[top] = "built-in"
        return Installed(dotted, "built-in")
    spec = PathFinder.find_spec(top, search_path())
    if spec is None:
        return None
    origin = _spec_file(sources, dotted, top, spec)
    for depth in range(1, len(parts)):  # submodules, inside the package's own folders
        locations = list(spec.submodule_search_locations or [])
        spec = PathFinder.find_spec(".".join(parts[: depth + 1]), locations) if locations else None
        if spec is None:
            raise NotHermetic(
                f"`{dotted}` is not a module file of the installed package `{top}` (made when it runs)"
            )
        _spec_file(sources, dotted, ".".join(parts[: depth + 1]), spec)
    sources.installed[top] = origin
    return Installed(dotted, origin)


def search_path() -> list[str]:
    """The folders an import searches (the worker runs this interpreter with this process's path)."""
    return [p or os.getcwd() for p in sys.path if isinstance(p, str)]


def _spec_file(sources: Sources, dotted: str, name: str, spec: object) -> str:
    """The real path of the module ``spec`` finds; ``NotHermetic`` when it (or a folder of its
    package) is inside the workspace, or it has no file (a namespace package spans folders)."""
    origin = getattr(spec, "origin", None)
    if not getattr(spec, "has_location", False) or not isinstance(origin, str):
        raise NotHermetic(
            f"`{dotted}`: `{name}` is a namespace package, not one installed module (its folders may "
            "include the workspace's)"
        )
    real = os.path.realpath(origin)
    folders = [os.path.realpath(f) for f in getattr(spec, "submodule_search_locations", None) or []]
    for where in (real, *folders):
        if sources.inside(where):
            raise NotHermetic(
                f"`{dotted}` is imported from {where}, inside the workspace (a folder or virtual "
                "environment of the workspace is no installed package: its code would run)"
            )
    return real


def within(bound: str, path: str) -> bool:
    """Whether the real path ``path`` is the folder ``bound`` or inside it."""
    return path == bound or path.startswith(bound.rstrip(os.sep) + os.sep)


def outside_path(bound: str) -> list[str]:
    """``sys.path`` without the folders inside the workspace ``bound`` (an installed module is
    imported with the workspace's folders off the path)."""
    return [p for p in sys.path if not within(bound, os.path.realpath(p or os.getcwd()))]


def _under(sources: Sources, base: Path, absolute: str) -> Found | None:
    parts = absolute.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    stem = base.joinpath(*parts)
    for candidate, package in ((stem / "__init__.py", True), (stem.with_suffix(".py"), False)):
        if os.path.lexists(candidate):
            real = os.path.realpath(candidate)
            if not sources.inside(real):
                raise NotHermetic(f"`{absolute}` is {candidate}, a link out of the workspace (not read)")
            return Found(real, absolute, package)
    if stem.is_dir():
        real = os.path.realpath(stem)
        if not sources.inside(real):
            raise NotHermetic(f"`{absolute}` is {stem}, a link out of the workspace (not read)")
        return Found(real, absolute, True, folder=True)
    return None


def submodule(sources: Sources, parent: Found, name: str) -> Found | None:
    """The module ``name`` inside the package ``parent`` (None: not a package, or no such file)."""
    if not parent.package or not name.isidentifier():
        return None
    folder = Path(parent.path if parent.folder else os.path.dirname(parent.path))
    for candidate, package in ((folder / name / "__init__.py", True), (folder / f"{name}.py", False)):
        if os.path.lexists(candidate):
            real = os.path.realpath(candidate)
            if not sources.inside(real):
                raise NotHermetic(
                    f"`{parent.dotted}.{name}` is {candidate}, a link out of the workspace (not read)"
                )
            return Found(real, f"{parent.dotted}.{name}", package)
    if (folder / name).is_dir() and sources.inside(os.path.realpath(folder / name)):
        return Found(os.path.realpath(folder / name), f"{parent.dotted}.{name}", True, folder=True)
    return None
