"""The captured path's trust in installed packages (daemon/hermetic_imports.py ``installed``, issue #31):
a kernel of the workspace reading a value of a package installed outside the workspace (mujoco-warp's
``MJ_MINVAL = mujoco.mjMINVAL``) is built hermetically: the package is the user's environment,
trusted as the user is, and is imported by the build. Where it resolves is decided without
importing it; a package that resolves inside the workspace (a folder of it on the path, a virtual
environment it ships, a link or a ``.pth`` into either) or nowhere is refused as before, and its
code does not run at the decision, nor in a build given that decision.

Real files, real packages on ``sys.path``; real Warp on the CPU for the builds.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from warp_harness.daemon import findings as F
from warp_harness.daemon.captured import hermetic
from warp_harness.daemon.hermetic_build import NotHermetic, build
from warp_harness.daemon.hermetic_imports import INSTALLED

# an installed package: a value, an enum, and a marker its top-level code writes when it runs
PACKAGE = """
import enum

open({marker!r}, "a").write("ran\\n")

SCALE = 3.0


class Mode(enum.IntEnum):
    A = 2
"""

# a workspace kernel module reading the package's values three ways: a module constant bound to
# its attribute, a `wp.constant` of one, an enum whose member is one; and its enum in the kernel
KERNEL = """
import enum

import warp as wp

import {pkg}
from {pkg} import Mode

MIN = {pkg}.SCALE
OFF = wp.constant(float({pkg}.SCALE))


class Flag(enum.IntEnum):
    B = {pkg}.Mode.A


@wp.kernel
def k(x: wp.array(dtype=float), y: wp.array(dtype=float), z: wp.array(dtype=int)):
    i = wp.tid()
    y[i] = x[i] * MIN + OFF
    z[i] = Flag.B * 10 + Mode.A
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def names() -> Iterator[list[str]]:
    """Package names unique to the test; whatever of them a build imported is dropped after it."""
    made: list[str] = []
    yield made
    for name in made:
        for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[loaded]


def _package(folder: Path, names: list[str], marker: Path) -> str:
    name = f"wh_installed_{os.getpid()}_{len(names)}_{abs(hash(str(folder))) % 10**6}"
    names.append(name)
    _write(folder / name / "__init__.py", PACKAGE.format(marker=str(marker)))
    return name


def _kernel(ws: Path, pkg: str) -> tuple[Path, str]:
    path = _write(ws / "kern.py", KERNEL.format(pkg=pkg))
    return path, path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_package_installed_outside_the_workspace_is_built_hermetically(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import warp as wp

    ws, site_dir, marker = tmp_path / "ws", tmp_path / "site", tmp_path / "ran"
    pkg = _package(site_dir, names, marker)
    monkeypatch.syspath_prepend(str(site_dir))
    kern, source = _kernel(ws, pkg)

    why, decided = hermetic.decision(source, str(kern), "k", ws)
    assert why is None
    assert decided == {INSTALLED + pkg: os.path.realpath(site_dir / pkg / "__init__.py")}
    assert not marker.exists()  # decided without importing it

    built = build(source, str(kern), "k", ws, texts=decided)
    assert marker.read_text() == "ran\n"  # the build imported it: the user's own environment
    x = wp.array(np.arange(6, dtype=np.float32), device="cpu")
    y = wp.zeros(6, dtype=float, device="cpu")
    z = wp.zeros(6, dtype=int, device="cpu")
    wp.launch(built.kernel, dim=6, inputs=[x, y, z], device="cpu")
    np.testing.assert_array_equal(y.numpy(), np.arange(6, dtype=np.float32) * 3.0 + 3.0)
    np.testing.assert_array_equal(z.numpy(), np.full(6, 22))


def _inside(ws: Path, outside: Path, pkg_of: Any, how: str) -> list[str]:
    """Put a package inside the workspace and make it importable ``how``; the path entries to add."""
    if how == "workspace folder":
        pkg_of(ws / "vendor")
        return [str(ws / "vendor")]
    venv_site = ws / ".venv" / "lib" / "python3" / "site-packages"
    name = pkg_of(venv_site)
    if how == "workspace venv":
        return [str(venv_site)]
    if how == "link into the workspace venv":
        outside.mkdir(parents=True, exist_ok=True)
        (outside / name).symlink_to(venv_site / name, target_is_directory=True)
        return [str(outside)]
    assert how == ".pth into the workspace venv"
    _write(outside / "ws-venv.pth", str(venv_site) + "\n")
    return [str(outside)]


@pytest.mark.parametrize(
    "how",
    ["workspace folder", "workspace venv", "link into the workspace venv", ".pth into the workspace venv"],
)
def test_a_package_inside_the_workspace_is_refused_and_never_runs(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    ws, outside, marker = tmp_path / "ws", tmp_path / "site", tmp_path / "ran"
    made: list[str] = []

    def pkg_of(folder: Path) -> str:
        made.append(_package(folder, names, marker))
        return made[-1]

    entries = _inside(ws, outside, pkg_of, how)
    monkeypatch.setattr(sys, "path", list(sys.path))  # restored after the test
    for entry in entries:
        if how.startswith(".pth"):
            site.addsitedir(entry)  # reads its .pth files, as for a site folder of the environment
        else:
            sys.path.insert(0, entry)
    kern, source = _kernel(ws, made[0])

    why, decided = hermetic.decision(source, str(kern), "k", ws)
    assert why is not None and "inside the workspace" in why, why
    assert decided == {}
    # the worker, given that decision, imports nothing: building from it is refused
    with pytest.raises(NotHermetic, match="found neither in the workspace nor installed"):
        build(source, str(kern), "k", ws, texts=decided)
    assert not marker.exists()


def test_a_value_made_by_calling_the_package_is_refused(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build reads the package's attributes; it calls none of its functions (``X = pkg.f()``
    is bound by running code, as any call's result)."""
    ws, site_dir, marker = tmp_path / "ws", tmp_path / "site", tmp_path / "ran"
    pkg = _package(site_dir, names, marker)
    monkeypatch.syspath_prepend(str(site_dir))
    kern = _write(
        ws / "kern.py",
        f"import warp as wp\nimport {pkg}\nX = {pkg}.Mode(2)\n@wp.kernel\n"
        "def k(x: wp.array(dtype=int)):\n    x[wp.tid()] = X\n",
    )
    why = hermetic.why_not(kern.read_text(encoding="utf-8"), str(kern), "k", ws)
    assert why is not None and "`k` reads `X`, which the module binds at run time" in why, why
    assert not marker.exists()


def test_a_package_found_nowhere_is_refused(tmp_path: Path, names: list[str]) -> None:
    kern, source = _kernel(tmp_path / "ws", "wh_no_such_package_here")
    why = hermetic.why_not(source, str(kern), "k", tmp_path / "ws")
    assert why is not None and "found neither in the workspace nor installed outside it" in why, why


def test_the_contract_path_still_refuses_installed_packages(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a workspace (the contract path: the module's import folder bounds the search), an
    installed package is still refused: there the trust is not decided (docs/capture.md)."""
    from warp_harness.daemon import hermetic_build

    ws, site_dir, marker = tmp_path / "ws", tmp_path / "site", tmp_path / "ran"
    pkg = _package(site_dir, names, marker)
    monkeypatch.syspath_prepend(str(site_dir))
    kern, source = _kernel(ws, pkg)
    why, _ = hermetic_build.kernel_texts(source, str(kern), "k", None)
    assert why is not None and "not a module of the workspace" in why, why
    assert not marker.exists()


@pytest.mark.slow
def test_the_build_imports_only_the_decided_origin(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path changed between the decision and the build (another copy of the package comes
    first): the build refuses what loads from elsewhere than decided."""
    ws, first, second, marker = tmp_path / "ws", tmp_path / "a", tmp_path / "b", tmp_path / "ran"
    pkg = _package(first, names, marker)
    _write(second / pkg / "__init__.py", PACKAGE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(first))
    kern, source = _kernel(ws, pkg)
    why, decided = hermetic.decision(source, str(kern), "k", ws)
    assert why is None
    monkeypatch.syspath_prepend(str(second))
    with pytest.raises(NotHermetic, match=r"not .* as decided"):
        build(source, str(kern), "k", ws, texts=decided)


PYPROJECT = """
[tool.warp-harness.runtime]
devices = ["cpu"]
"""

RUN = """
import numpy as np
import warp as wp

import kern
import vendored

x = wp.array(np.arange(8, dtype=np.float32))
wp.launch(kern.k, dim=8, inputs=[x, wp.zeros(8, dtype=float), wp.zeros(8, dtype=int)])
wp.launch(vendored.v, dim=8, inputs=[x, wp.zeros(8, dtype=float)])
"""

VENDORED = """
import warp as wp

import {pkg}

SCALE = {pkg}.SCALE


@wp.kernel
def v(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * SCALE
"""


@pytest.mark.slow
def test_ci_replays_the_installed_packages_kernel_hermetically(
    tmp_path: Path, names: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`warp-harness capture` then `ci --trust`, the package outside the workspace on PYTHONPATH:
    its kernel's replay is clean and hermetic (no WHD069); a kernel reading a package vendored in
    the workspace (its folder on PYTHONPATH) is replayed from an import, with WHD069."""
    from daemon_helpers import capture

    ws, site_dir, marker = tmp_path / "ws", tmp_path / "site", tmp_path / "ran"
    pkg = _package(site_dir, names, marker)
    vendored = _package(ws / "vendor", names, tmp_path / "vendored-ran")
    _kernel(ws, pkg)
    _write(ws / "vendored.py", VENDORED.format(pkg=vendored))
    _write(ws / "run.py", RUN)
    _write(ws / "pyproject.toml", PYPROJECT)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site_dir), str(ws / "vendor")]))
    capture(ws, "run.py", "captured 2 launch(es) of 2 kernel(s)")

    p = subprocess.run(
        [sys.executable, "-m", "warp_harness", "ci", ".", "--trust", "--no-bench", "--output-format", "json"],
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert p.stdout, p.stderr
    records = [r for r in json.loads(p.stdout)["results"] if r["rule"].startswith("WHD0")]
    kern = [(r["rule"], r["severity"]) for r in records if r["location"]["path"] == "kern.py"]
    assert kern == [(F.REPLAYED, "info")], records
    (clean,) = [r for r in records if r["location"]["path"] == "kern.py"]
    assert "not hermetic" not in clean["message"]
    other = sorted((r["rule"], r["severity"]) for r in records if r["location"]["path"] == "vendored.py")
    assert other == [(F.NOT_HERMETIC, "warning"), (F.REPLAYED, "info")], records
    (why,) = [r for r in records if r["rule"] == F.NOT_HERMETIC]
    assert "inside the workspace" in why["message"], why
    assert p.returncode == 0, p.stdout[-2000:]
